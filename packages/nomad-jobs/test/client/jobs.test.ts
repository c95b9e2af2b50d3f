import { afterEach, describe, expect, it } from "vitest";
import { createNomadClient } from "../../src/client/client.js";
import { NomadError } from "../../src/client/errors.js";
import { DISPATCH_PAYLOAD_LIMIT } from "../../src/client/jobs.js";
import { json, scriptedServer, text } from "../helpers/http-server.js";

const fast = { attempts: 3, baseDelayMs: 5, maxDelayMs: 20 };
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
async function setup(handler: Parameters<typeof scriptedServer>[0]) {
  const srv = await scriptedServer(handler);
  const client = createNomadClient({ address: srv.url, retry: fast });
  cleanup.push(
    () => srv.close(),
    () => client.close(),
  );
  return { srv, client };
}

const job = {
  ID: "flakegym-x",
  TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "raw_exec", Config: {} }] }],
};

describe("jobs", () => {
  it("register posts {Job} to /v1/jobs; enforceIndex 0 makes it create-only", async () => {
    const { srv, client } = await setup((_r, res) =>
      json(res, 200, { EvalID: "ev1", JobModifyIndex: 11 }, 11),
    );
    const r = await client.jobs.register(job);
    expect(r.data.EvalID).toBe("ev1");
    expect(r.meta.index).toBe(11);
    expect(srv.seen[0]).toMatchObject({ method: "POST", path: "/v1/jobs" });
    expect(JSON.parse(srv.seen[0]!.body)).toEqual({ Job: job });
    await client.jobs.register(job, { enforceIndex: 0 });
    expect(JSON.parse(srv.seen[1]!.body)).toMatchObject({ EnforceIndex: true, JobModifyIndex: 0 });
  });

  it("register refuses a malformed job before sending it", async () => {
    const { srv, client } = await setup((_r, res) => json(res, 200, {}));
    await expect(client.jobs.register({ ...job, ID: "has space" })).rejects.toThrow("may not contain spaces");
    expect(srv.seen).toHaveLength(0);
  });

  it("dispatch sends meta, base64 payload, id prefix and the idempotency token as a query param", async () => {
    const { srv, client } = await setup((_r, res) =>
      json(res, 200, { DispatchedJobID: "p/dispatch-t1-1700000000-abcd1234", EvalID: "e" }),
    );
    const r = await client.jobs.dispatch("p", {
      meta: { flakegym_trajectory: "t1" },
      payload: "hi",
      idempotencyToken: "t1:0",
      idPrefixTemplate: "t1",
    });
    expect(r.data.DispatchedJobID).toBe("p/dispatch-t1-1700000000-abcd1234");
    const seen = srv.seen[0]!;
    expect(seen.path).toBe("/v1/job/p/dispatch");
    expect(seen.query.get("idempotency_token")).toBe("t1:0");
    expect(JSON.parse(seen.body)).toEqual({
      JobID: "p",
      Meta: { flakegym_trajectory: "t1" },
      Payload: Buffer.from("hi").toString("base64"),
      IdPrefixTemplate: "t1",
    });
  });

  it("a dispatch with a token is resent on 5xx with the same token; without one it is not", async () => {
    const { srv, client } = await setup((_r, res, n) =>
      n === 1 ? text(res, 500, "raft: leadership lost") : json(res, 200, { DispatchedJobID: "p/dispatch-1" }),
    );
    await client.jobs.dispatch("p", { idempotencyToken: "tok" });
    expect(srv.seen.map((s) => s.query.get("idempotency_token"))).toEqual(["tok", "tok"]);
    const { srv: srv2, client: c2 } = await setup((_r, res) => text(res, 500, "raft: leadership lost"));
    await expect(c2.jobs.dispatch("p", {})).rejects.toBeInstanceOf(NomadError);
    expect(srv2.seen).toHaveLength(1);
  });

  it("dispatch refuses a payload over 16 KiB", async () => {
    const { client } = await setup((_r, res) => json(res, 200, {}));
    await expect(
      client.jobs.dispatch("p", { payload: new Uint8Array(DISPATCH_PAYLOAD_LIMIT + 1) }),
    ).rejects.toThrow("exceeds Nomad's limit");
  });

  it("deregister with purge; ids with slashes (dispatched children) are escaped", async () => {
    const { srv, client } = await setup((_r, res) => json(res, 200, { EvalID: "" }));
    await client.jobs.deregister("p/dispatch-1700-ab", { purge: true });
    const seen = srv.seen[0]!;
    expect(seen.method).toBe("DELETE");
    expect(seen.query.get("purge")).toBe("true");
    // Escaped like Go's url.PathEscape; Nomad decodes the path, so the id arrives whole.
    expect(seen.path).toBe("/v1/job/p%2Fdispatch-1700-ab");
    expect(decodeURIComponent(seen.path)).toBe("/v1/job/p/dispatch-1700-ab");
  });

  it("list passes prefix, filter and meta", async () => {
    const { srv, client } = await setup((_r, res) =>
      json(res, 200, [{ ID: "flakegym-a", Status: "running", Meta: { flakegym_run: "r1" } }]),
    );
    const r = await client.jobs.list({
      prefix: "flakegym-",
      filter: 'Meta.flakegym_run == "r1"',
      meta: true,
    });
    expect(r.data[0]!.Meta).toEqual({ flakegym_run: "r1" });
    expect(Object.fromEntries(srv.seen[0]!.query)).toEqual({
      prefix: "flakegym-",
      filter: 'Meta.flakegym_run == "r1"',
      meta: "true",
    });
  });

  it("allocations is a blocking query: index and wait go out, X-Nomad-Index comes back", async () => {
    const { srv, client } = await setup(async (r, res) => {
      if (r.query.get("index") === "40") await new Promise((ok) => setTimeout(ok, 150));
      json(res, 200, [], 41);
    });
    const r = await client.jobs.allocations("j", {}, { index: 40, waitMs: 1_000 });
    expect(r.meta.index).toBe(41);
    expect(srv.seen[0]!.query.get("index")).toBe("40");
    expect(srv.seen[0]!.query.get("wait")).toBe("1000ms");
    expect(r.data).toEqual([]);
  });

  it("a blocking query's deadline covers the wait: a slow answer within it is not a timeout", async () => {
    const { client } = await setup(async (_r, res) => {
      await new Promise((ok) => setTimeout(ok, 400));
      json(res, 200, null, 9);
    });
    const c2 = createNomadClient({ address: client.config.address, timeoutMs: 100, retry: fast });
    cleanup.push(() => c2.close());
    // timeoutMs 100 < server delay 400 < wait 1000: the call lives for wait + slack.
    const r = await c2.jobs.allocations("j", {}, { index: 8, waitMs: 1_000 });
    expect(r.data).toEqual([]);
    expect(r.meta.index).toBe(9);
  });

  it("evaluations parses FailedTGAllocs", async () => {
    const { client } = await setup((_r, res) =>
      json(res, 200, [
        {
          ID: "ev",
          Status: "blocked",
          FailedTGAllocs: { worker: { NodesEvaluated: 2, ConstraintFiltered: { "missing drivers": 2 } } },
        },
      ]),
    );
    const r = await client.jobs.evaluations("j");
    expect(r.data[0]!.FailedTGAllocs.worker!.ConstraintFiltered).toEqual({ "missing drivers": 2 });
  });
});
