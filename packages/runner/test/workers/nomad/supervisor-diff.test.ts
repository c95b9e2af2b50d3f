import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  diffBodyProblem,
  fetchSupervisorDiff,
  parseDiffHead,
  SUPERVISOR_DIFF_PATH,
} from "../../../src/workers/nomad/supervisor-diff.js";
import { tempDir } from "../../helpers/temp-dir.js";

const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

describe("parseDiffHead / diffBodyProblem", () => {
  it("accepts the answer to this request only, with a byte count and a sha256", () => {
    const ok = { seq: 2, baseCommit: "a".repeat(40), bytes: 3, sha256: sha("abc") };
    expect(parseDiffHead(JSON.stringify(ok), 2)).toEqual(ok);
    expect(parseDiffHead(JSON.stringify(ok), 3)).toEqual({
      problem: expect.stringContaining("answered request 2, not 3"),
    });
    expect(parseDiffHead(JSON.stringify({ ...ok, sha256: undefined }), 2)).toEqual({
      problem: expect.stringContaining("no sha256"),
    });
    expect(parseDiffHead(JSON.stringify({ seq: 2, bytes: 3, sha256: "x" }), 2)).toMatchObject({
      problem: expect.any(String),
    });
    expect(parseDiffHead("not json", 1)).toEqual({
      problem: expect.stringContaining("does not start with a JSON line"),
    });
    // an error answer carries no patch
    expect(parseDiffHead(JSON.stringify({ seq: 1, error: "git failed" }), 1)).toEqual({
      seq: 1,
      error: "git failed",
    });
  });

  it("the streamed body must match the announced size and digest", () => {
    const info = { seq: 1, bytes: 3, sha256: sha("abc") };
    expect(diffBodyProblem(info, { bytes: 3, sha256: sha("abc") })).toBeUndefined();
    expect(diffBodyProblem(info, { bytes: 4, sha256: sha("abcd") })).toContain(
      "4 bytes, the supervisor announced 3",
    );
    expect(diffBodyProblem(info, { bytes: 3, sha256: sha("abd") })).toContain("sha256 differs");
    expect(diffBodyProblem({ seq: 1, error: "x" }, { bytes: 1, sha256: sha("a") })).toContain("announced 0");
  });
});

/** A real HTTP/2 server on port 0 playing the supervisor's gate. */
let server: Http2Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});
async function gate(
  answer: (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void,
): Promise<string> {
  server = createServer();
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    answer(stream, headers);
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function honest(patch: Buffer) {
  return (stream: ServerHttp2Stream, h: IncomingHttpHeaders) => {
    if (h.authorization !== "Bearer tok" || h[":path"] !== SUPERVISOR_DIFF_PATH) {
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "grpc-status": "16" },
        { endStream: true },
      );
      return;
    }
    const seq = Number(h["flakegym-seq"]);
    stream.respond({ ":status": 200 });
    stream.write(
      `${JSON.stringify({ seq, baseCommit: "b".repeat(40), bytes: patch.length, sha256: sha(patch) })}\n`,
    );
    for (let at = 0; at < patch.length; at += 65536) stream.write(patch.subarray(at, at + 65536));
    stream.end();
  };
}

describe("fetchSupervisorDiff against a real HTTP/2 gate", () => {
  it("streams the patch to the file and returns the announced info", async () => {
    const tmp = await tempDir("flakegym-diff-");
    try {
      const patch = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
      const address = await gate(honest(patch));
      const file = join(tmp.path, "diff.patch");
      const info = await fetchSupervisorDiff({
        address,
        token: "tok",
        seq: 4,
        file,
        signal: AbortSignal.timeout(10_000),
      });
      expect(info).toMatchObject({ seq: 4, bytes: patch.length });
      expect((await readFile(file)).equals(patch)).toBe(true);
    } finally {
      await tmp.cleanup();
    }
  });

  it("refuses a wrong token's answer, a stale sequence, a body past the bound and a body that differs", async () => {
    const tmp = await tempDir("flakegym-diff-");
    const file = join(tmp.path, "diff.patch");
    const fetch = (address: string, extra: { token?: string; maxBytes?: number } = {}) =>
      fetchSupervisorDiff({
        address,
        token: extra.token ?? "tok",
        seq: 2,
        file,
        signal: AbortSignal.timeout(10_000),
        ...(extra.maxBytes ? { maxBytes: extra.maxBytes } : {}),
      }).catch((e: Error) => e.message);
    try {
      const address = await gate(honest(Buffer.from("x".repeat(5000))));
      expect(await fetch(address, { token: "other" })).toBe(
        "the supervisor's gate refused the worker's core token",
      );
      expect(await fetch(address, { maxBytes: 1000 })).toBe(
        "the patch is larger than 1000 bytes: not read further",
      );
      await new Promise<void>((r) => server!.close(() => r()));
      const stale = await gate((stream) => {
        stream.respond({ ":status": 200 });
        stream.end(`${JSON.stringify({ seq: 1, bytes: 0, sha256: sha("") })}\n`);
      });
      expect(await fetch(stale)).toContain("answered request 1, not 2: refused");
      await new Promise<void>((r) => server!.close(() => r()));
      const tampered = await gate((stream) => {
        stream.respond({ ":status": 200 });
        stream.end(`${JSON.stringify({ seq: 2, bytes: 3, sha256: sha("abc") })}\nabd`);
      });
      expect(await fetch(tampered)).toBe("the patch's sha256 differs from the one the supervisor announced");
    } finally {
      await tmp.cleanup();
    }
  });

  it("ends when its signal does (a gate that never answers)", async () => {
    const tmp = await tempDir("flakegym-diff-");
    try {
      const address = await gate(() => {}); // accepted, never answered
      const t0 = performance.now();
      const err = await fetchSupervisorDiff({
        address,
        token: "tok",
        seq: 1,
        file: join(tmp.path, "diff.patch"),
        signal: AbortSignal.timeout(300),
      }).catch((e: unknown) => e);
      expect((err as Error).name).toBe("TimeoutError");
      expect(performance.now() - t0).toBeLessThan(5_000);
    } finally {
      await tmp.cleanup();
    }
  });
});
