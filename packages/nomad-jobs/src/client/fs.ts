import type { CallOptions, RequestCore, Result } from "./request.js";

/**
 * `/v1/client/fs/*`: files of an allocation's directory (needs read-fs). Paths are relative to the
 * allocation dir: `alloc/…` is the shared alloc dir (NOMAD_ALLOC_DIR), `<task>/local/…` a task's.
 * A terminal allocation's files stay readable until the client garbage-collects it.
 */
export function createFsApi(core: RequestCore) {
  return {
    /** `GET /v1/client/fs/cat/:alloc?path=`: a file's bytes (binary-safe). */
    async cat(allocId: string, path: string, opts: CallOptions = {}): Promise<Result<Buffer>> {
      const { response, meta } = await core.stream(
        { method: "GET", path: `/v1/client/fs/cat/${encodeURIComponent(allocId)}`, query: { path } },
        opts,
      );
      const chunks: Buffer[] = [];
      try {
        for await (const c of response) chunks.push(c as Buffer);
      } finally {
        response.destroy();
      }
      return { data: Buffer.concat(chunks), meta };
    },
  };
}
export type FsApi = ReturnType<typeof createFsApi>;
