import type { CallOptions, QueryOptions, RequestCore, Result } from "./request.js";
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
    /**
     * `POST /v1/client/allocation/:id/signal`: sends `signal` (e.g. "SIGUSR2") to one task of the
     * allocation (needs alloc-lifecycle). Not retried: a resend would signal twice.
     */
    async signal(
      allocId: string,
      req: { signal: string; task: string },
      opts: CallOptions = {},
    ): Promise<void> {
      await core.text(
        {
          method: "POST",
          path: `/v1/client/allocation/${encodeURIComponent(allocId)}/signal`,
          body: { Signal: req.signal, Task: req.task },
        },
        opts,
      );
    },
  };
}
export type AllocationsApi = ReturnType<typeof createAllocationsApi>;
