import type { QueryOptions, RequestCore, Result } from "./request.js";
import { Allocation } from "./responses.js";

/** `/v1/allocation/:id`. */
export function createAllocationsApi(core: RequestCore) {
  return {
    /** `GET /v1/allocation/:id`; with `index` it blocks until the allocation changes past it. */
    info(allocId: string, opts: QueryOptions = {}): Promise<Result<Allocation>> {
      return core.json(
        { method: "GET", path: `/v1/allocation/${encodeURIComponent(allocId)}` },
        Allocation,
        opts,
      );
    },
  };
}
export type AllocationsApi = ReturnType<typeof createAllocationsApi>;
