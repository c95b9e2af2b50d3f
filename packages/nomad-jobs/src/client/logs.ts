import { lines } from "./ndjson.js";
import type { CallOptions, RequestCore, Result } from "./request.js";

/** `GET /v1/client/fs/logs/:alloc`: a task's stdout/stderr (needs read-logs). */

export interface LogsRequest {
  readonly task: string;
  readonly type: "stdout" | "stderr";
  /** Where `offset` counts from (default: start). */
  readonly origin?: "start" | "end";
  readonly offset?: number;
}

function query(req: LogsRequest, follow: boolean) {
  return {
    task: req.task,
    type: req.type,
    plain: "true",
    follow: follow ? "true" : "false",
    origin: req.origin ?? "start",
    offset: String(req.offset ?? 0),
  };
}

export function createLogsApi(core: RequestCore) {
  return {
    /** The log as text, as far as it is written now. */
    read(allocId: string, req: LogsRequest, opts: CallOptions = {}): Promise<Result<string>> {
      return core.text(
        {
          method: "GET",
          path: `/v1/client/fs/logs/${encodeURIComponent(allocId)}`,
          query: query(req, false),
        },
        opts,
      );
    },
    /** Follows the log line by line until the task ends or `signal` aborts. */
    async *follow(allocId: string, req: LogsRequest, opts: CallOptions = {}): AsyncGenerator<string> {
      const { response } = await core.stream(
        { method: "GET", path: `/v1/client/fs/logs/${encodeURIComponent(allocId)}`, query: query(req, true) },
        opts,
      );
      try {
        yield* lines(response);
      } finally {
        response.destroy();
      }
    },
  };
}
export type LogsApi = ReturnType<typeof createLogsApi>;
