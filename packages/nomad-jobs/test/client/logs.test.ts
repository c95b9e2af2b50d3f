import { afterEach, describe, expect, it } from "vitest";
import { createNomadClient } from "../../src/client/client.js";
import { scriptedServer, text } from "../helpers/http-server.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("task logs", () => {
  it("reads plain text from /v1/client/fs/logs/:alloc", async () => {
    const srv = await scriptedServer((_r, res) => text(res, 200, "line 1\nline 2\n"));
    const client = createNomadClient({ address: srv.url, token: "t" });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    const r = await client.logs.read("alloc-1", { task: "worker", type: "stderr" });
    expect(r.data).toBe("line 1\nline 2\n");
    const q = srv.seen[0]!;
    expect(q.path).toBe("/v1/client/fs/logs/alloc-1");
    expect(Object.fromEntries(q.query)).toEqual({
      task: "worker",
      type: "stderr",
      plain: "true",
      follow: "false",
      origin: "start",
      offset: "0",
    });
    expect(q.headers["x-nomad-token"]).toBe("t");
  });

  it("follows line by line until the server ends the log", async () => {
    const srv = await scriptedServer((_r, res) => {
      res.writeHead(200);
      res.write("a\nb");
      setTimeout(() => res.end("c\nd\n"), 20);
    });
    const client = createNomadClient({ address: srv.url });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    const got: string[] = [];
    for await (const l of client.logs.follow("a1", { task: "t", type: "stdout" })) got.push(l);
    expect(got).toEqual(["a", "bc", "d"]);
    expect(srv.seen[0]!.query.get("follow")).toBe("true");
  });
});
