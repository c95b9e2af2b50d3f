import { afterEach, describe, expect, it } from "vitest";
import { createNomadClient } from "../../src/client/client.js";
import { NomadError } from "../../src/client/errors.js";
import { scriptedServer, text } from "../helpers/http-server.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("allocation filesystem", () => {
  it("cat returns a file's bytes unchanged (binary-safe) from /v1/client/fs/cat/:alloc?path=", async () => {
    const bytes = Buffer.from([0, 255, 10, 13, 0xc3, 0x28, 1]);
    const srv = await scriptedServer((_r, res) => {
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end(bytes);
    });
    const client = createNomadClient({ address: srv.url, token: "t", namespace: "ns1" });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    const r = await client.fs.cat("alloc 1", "alloc/cline/flakegym/diff.patch");
    expect(r.data).toEqual(bytes);
    const q = srv.seen[0]!;
    expect(q.method).toBe("GET");
    expect(q.path).toBe("/v1/client/fs/cat/alloc%201");
    expect(q.query.get("path")).toBe("alloc/cline/flakegym/diff.patch");
    expect(q.query.get("namespace")).toBe("ns1");
    expect(q.headers["x-nomad-token"]).toBe("t");
  });

  it("a missing file is a NomadError with Nomad's status and message", async () => {
    const srv = await scriptedServer((_r, res) => text(res, 400, "stat alloc/x: no such file or directory"));
    const client = createNomadClient({ address: srv.url });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    const err = await client.fs.cat("a1", "alloc/x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NomadError);
    expect(err).toMatchObject({ status: 400, body: expect.stringContaining("no such file") });
  });
});
