import { NomadError } from "./errors.js";
import type { CallOptions, RequestCore, Result } from "./request.js";

/**
 * `/v1/client/fs/*`: files of an allocation's directory (needs read-fs). Paths are relative to the
 * allocation dir: `alloc/…` is the shared alloc dir (NOMAD_ALLOC_DIR), `<task>/local/…` a task's.
 * A terminal allocation's files stay readable until the client garbage-collects it.
 */
export function createFsApi(core: RequestCore) {
  return {
    /**
     * `GET /v1/client/fs/cat/:alloc?path=`: a file's bytes (binary-safe). With `maxBytes` the read
     * stops (E_NOMAD_RESPONSE, naming the path and the bound) as soon as more arrive: the file
     * lives where the workload can write it, so its size is the workload's choice.
     */
    async cat(
      allocId: string,
      path: string,
      opts: CallOptions & { maxBytes?: number } = {},
    ): Promise<Result<Buffer>> {
      const apiPath = `/v1/client/fs/cat/${encodeURIComponent(allocId)}`;
      const { response, meta } = await core.stream({ method: "GET", path: apiPath, query: { path } }, opts);
      const chunks: Buffer[] = [];
      let bytes = 0;
      try {
        for await (const c of response) {
          bytes += (c as Buffer).length;
          if (opts.maxBytes !== undefined && bytes > opts.maxBytes) {
            throw new NomadError(
              "E_NOMAD_RESPONSE",
              `allocation ${allocId}: ${path} is larger than ${opts.maxBytes} bytes: not read further`,
              {
                method: "GET",
                path: apiPath,
                hint: "raise the caller's size bound if the file is expected to be this large",
              },
            );
          }
          chunks.push(c as Buffer);
        }
      } finally {
        response.destroy();
      }
      return { data: Buffer.concat(chunks), meta };
    },
  };
}
export type FsApi = ReturnType<typeof createFsApi>;
