import { z } from "zod";
import type { CallOptions, RequestCore, Result } from "./request.js";

/** `/v1/status/...`. */
export function createStatusApi(core: RequestCore) {
  return {
    /** `GET /v1/status/leader`: the leader's RPC address ("" when there is none). */
    leader(opts: CallOptions = {}): Promise<Result<string>> {
      return core.json({ method: "GET", path: "/v1/status/leader" }, z.string(), opts);
    },
  };
}
export type StatusApi = ReturnType<typeof createStatusApi>;
