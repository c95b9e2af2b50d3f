import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createNomadClient } from "../../src/client/client.js";
import { NomadError } from "../../src/client/errors.js";
import { createDeadline } from "../../src/deadline.js";
import { collectGarbageEvery } from "../helpers/gc.js";
import { closedPort, json, scriptedServer, text } from "../helpers/http-server.js";

const fast = { attempts: 4, baseDelayMs: 5, maxDelayMs: 20 };
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function setup(
  handler: Parameters<typeof scriptedServer>[0],
  extra: Parameters<typeof createNomadClient>[0] = {},
) {
  const srv = await scriptedServer(handler);
  const client = createNomadClient({ address: srv.url, retry: fast, ...extra });
  cleanup.push(
    () => srv.close(),
    () => client.close(),
  );
  return { srv, client };
}

async function rejection(p: Promise<unknown>): Promise<NomadError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(NomadError);
    return e as NomadError;
  }
  throw new Error("expected the call to fail");
}

describe("request core", () => {
  it("sends the token header and namespace/region query params; per-call values win", async () => {
    const { srv, client } = await setup((_r, res) => json(res, 200, "10.0.0.1:4647"), {
      token: "s3cr3t",
      namespace: "rl",
      region: "eu",
    });
    await client.status.leader();
    await client.status.leader({ namespace: "other" });
    expect(srv.seen[0]!.headers["x-nomad-token"]).toBe("s3cr3t");
    expect(srv.seen[0]!.query.get("namespace")).toBe("rl");
    expect(srv.seen[0]!.query.get("region")).toBe("eu");
    expect(srv.seen[1]!.query.get("namespace")).toBe("other");
  });

  it("sends no token header without a token", async () => {
    const { srv, client } = await setup((_r, res) => json(res, 200, ""));
    await client.status.leader();
    expect(srv.seen[0]!.headers["x-nomad-token"]).toBeUndefined();
  });

  it("one error type: status, body, method, path, expected statuses, attempts and a hint", async () => {
    const { client } = await setup((_r, res) => text(res, 403, "Permission denied"));
    const e = await rejection(client.jobs.info("web"));
    expect(e).toMatchObject({
      code: "E_NOMAD_HTTP",
      status: 403,
      body: "Permission denied",
      method: "GET",
      path: "/v1/job/web",
      expected: [200],
      attempts: 1,
    });
    expect(e.message).toBe(
      "Nomad GET /v1/job/web: unexpected response 403 (expected 200): Permission denied",
    );
    expect(e.hint).toContain("NOMAD_TOKEN");
  });

  it("404 is not retried and is recognisable", async () => {
    const { srv, client } = await setup((_r, res) => text(res, 404, "job not found"));
    const e = await rejection(client.jobs.info("missing"));
    expect(e.isNotFound).toBe(true);
    expect(srv.seen).toHaveLength(1);
  });

  it("retries a GET on 5xx with backoff and succeeds", async () => {
    const { srv, client } = await setup((_r, res, n) =>
      n < 3 ? text(res, 500, "rpc error: no leader") : json(res, 200, "10.0.0.1:4647"),
    );
    const r = await client.status.leader();
    expect(r.data).toBe("10.0.0.1:4647");
    expect(srv.seen).toHaveLength(3);
  });

  it("gives up after the configured attempts, reporting them", async () => {
    const { srv, client } = await setup((_r, res) => text(res, 503, "overloaded"));
    const e = await rejection(client.status.leader());
    expect(srv.seen).toHaveLength(4);
    expect(e).toMatchObject({ status: 503, attempts: 4 });
  });

  it("never retries a non-idempotent call on an HTTP error (register)", async () => {
    const { srv, client } = await setup((_r, res) =>
      text(res, 500, "1 error occurred:\n\t* Missing job datacenters\n\n"),
    );
    const job = {
      ID: "x",
      TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "raw_exec", Config: {} }] }],
    };
    const e = await rejection(client.jobs.register(job));
    expect(srv.seen).toHaveLength(1);
    expect(e.message).toContain("Missing job datacenters");
  });

  it("a connection cut mid-request is retried only for idempotent calls", async () => {
    let n = 0;
    const server = createServer((req, res) => {
      n++;
      if (n === 1) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json", "X-Nomad-Index": "3" });
      res.end(JSON.stringify({ EvalID: "e" }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanup.push(
      () => new Promise((r) => server.close(r)),
      () => server.closeAllConnections(),
    );
    const client = createNomadClient({
      address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      retry: fast,
    });
    cleanup.push(() => client.close());
    // DELETE is idempotent: the second attempt succeeds.
    await client.jobs.deregister("j", { purge: true });
    expect(n).toBe(2);
    // POST without a token is not: the cut is reported, not resent.
    n = 0;
    const e = await rejection(client.jobs.dispatch("p", { meta: {} }));
    expect(e.code).toBe("E_NOMAD_CONNECT");
    expect(n).toBe(1);
  });

  it("a safe call reset on a reused keep-alive socket is resent at once on a fresh one, beyond its attempts", async () => {
    // A server that closes an idle keep-alive connection just as the client reuses it: every
    // connection's second request is cut (what the Nomad double did to 4 of 1 000 trajectories).
    const served = new WeakMap<object, number>();
    let cut = 0;
    const server = createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      if (n > 1) {
        cut++;
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json", "X-Nomad-Index": "3" });
      res.end(JSON.stringify({ EvalID: "e" }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanup.push(
      () => new Promise((r) => server.close(r)),
      () => server.closeAllConnections(),
    );
    const client = createNomadClient({
      address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      // no retries: only the reused socket's resend can save the call
      retry: { attempts: 1, baseDelayMs: 5, maxDelayMs: 20 },
    });
    cleanup.push(() => client.close());
    for (let i = 0; i < 3; i++) await client.jobs.deregister("j", { purge: true });
    expect(cut).toBeGreaterThan(0);
    // a POST without an idempotency token may have acted: its reset is reported, never resent
    const before = cut;
    const e = await rejection(client.jobs.dispatch("p", { meta: {} }));
    expect(e.code).toBe("E_NOMAD_CONNECT");
    expect(cut).toBeGreaterThan(before);
  });

  it("a refused connection is resent even for non-idempotent calls (the request never left)", async () => {
    const client = createNomadClient({ address: `http://127.0.0.1:${await closedPort()}`, retry: fast });
    cleanup.push(() => client.close());
    const e = await rejection(client.jobs.dispatch("p", {}));
    expect(e.code).toBe("E_NOMAD_CONNECT");
    expect(e.attempts).toBe(4);
    expect(e.hint).toContain("NOMAD_ADDR");
  });

  it("a call past its deadline fails with E_NOMAD_TIMEOUT", async () => {
    const { client } = await setup(() => {
      // never answers
    });
    const started = Date.now();
    const e = await rejection(client.status.leader({ timeoutMs: 150 }));
    expect(e.code).toBe("E_NOMAD_TIMEOUT");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("the deadline of a call with a caller's signal fires while garbage collections run, naming the limit", async () => {
    const { client } = await setup(() => {
      // never answers
    });
    const stopGc = collectGarbageEvery();
    cleanup.push(stopGc);
    const caller = new AbortController();
    const started = Date.now();
    const e = await rejection(client.status.leader({ signal: caller.signal, timeoutMs: 300 }));
    expect(e.code).toBe("E_NOMAD_TIMEOUT");
    expect(e.message).toContain("no answer within 300 ms (the call's timeoutMs)");
    expect(Date.now() - started).toBeLessThan(5_000);
    const { client: viaConfig } = await setup(() => {}, { timeoutMs: 300 });
    const e2 = await rejection(viaConfig.status.leader({ signal: caller.signal }));
    expect(e2.message).toContain("no answer within 300 ms (the Nomad client's timeoutMs)");
    const e3 = await rejection(viaConfig.status.leader({ timeoutMs: 200, timeoutName: "cleanupTimeoutMs" }));
    expect(e3.message).toContain("no answer within 200 ms (cleanupTimeoutMs)");
    // A caller's own deadline is named in the abort error.
    const outer = createDeadline({ timeout: { ms: 200, limit: "--some-wait" } });
    const e4 = await rejection(viaConfig.status.leader({ signal: outer.signal }));
    expect(e4.code).toBe("E_NOMAD_ABORTED");
    expect(e4.message).toContain("aborted (--some-wait ran out (200 ms))");
  });

  it("an aborted call fails with E_NOMAD_ABORTED carrying the reason", async () => {
    const { client } = await setup(() => {});
    const ac = new AbortController();
    const p = client.status.leader({ signal: ac.signal });
    setTimeout(() => ac.abort(new Error("Ctrl-C")), 30);
    const e = await rejection(p);
    expect(e.code).toBe("E_NOMAD_ABORTED");
    expect((e.cause as Error).message).toBe("Ctrl-C");
  });

  it("an answer of the wrong shape names the field", async () => {
    const { client } = await setup((_r, res) => json(res, 200, { ID: "a1", ClientStatus: "exploded" }));
    const e = await rejection(client.allocations.info("a1"));
    expect(e.code).toBe("E_NOMAD_RESPONSE");
    expect(e.message).toContain("field 'JobID'");
  });

  it("unknown response fields pass through", async () => {
    const alloc = {
      ID: "a1",
      JobID: "j",
      ClientStatus: "running",
      CreateIndex: 1,
      ModifyIndex: 2,
      NewField2031: { x: 1 },
    };
    const { client } = await setup((_r, res) => json(res, 200, alloc));
    const r = await client.allocations.info("a1");
    expect((r.data as Record<string, unknown>).NewField2031).toEqual({ x: 1 });
    expect(r.data.TaskStates).toEqual({});
  });

  it("works under a path prefix in NOMAD_ADDR (a reverse proxy)", async () => {
    const srv = await scriptedServer((_r, res) => json(res, 200, ""));
    const client = createNomadClient({ address: `${srv.url}/nomad/` });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    await client.status.leader();
    expect(srv.seen[0]!.path).toBe("/nomad/v1/status/leader");
    expect(z.string().parse(srv.seen[0]!.method)).toBe("GET");
  });
});
