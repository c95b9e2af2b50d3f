import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { exportRun } from "../../src/export/formats/export-run.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import { createDummyDeps, type DummyDeps } from "../../src/rollout/dummy-deps.js";
import { inlineScenarioId, parseRows } from "../../src/serve/group-tasks.js";
import { apiSchema, type StreamLine } from "../../src/serve/schema.js";
import {
  authorized,
  busyError,
  finishedGroupOf,
  isLoopback,
  type ServeHandle,
  startServe,
} from "../../src/serve/server.js";
import { loadTask } from "../../src/tasks/catalog.js";
import { TOKENIZERS } from "../export/fixtures.js";
import { truncationReplay } from "../helpers/truncation-replay.js";

/**
 * `flakegym serve` against a real HTTP server on loopback port 0, groups run by runRollout with the
 * in-process dummy deps (real orchestration, files and resume; no workers): a trainer that
 * disconnects, resubmits, cancels or floods gets correct answers, nothing runs twice, and a
 * restarted server loses no finished trajectory.
 */

const TASK = "semver-lite-caret-zero";
let tmp: { path: string; cleanup: () => Promise<void> };
let tok: ChatTokenizer;
const handles: ServeHandle[] = [];

beforeAll(async () => {
  const path = await mkdtemp(join(tmpdir(), "flakegym-serve-"));
  tmp = { path, cleanup: () => rm(path, { recursive: true, force: true }) };
  tok = await loadChatTokenizer(TOKENIZERS.qwen3);
});
afterEach(async () => {
  for (const h of handles.splice(0)) await h.close();
});
afterAll(async () => {
  await tmp.cleanup();
});

let n = 0;
async function serve(
  deps: DummyDeps,
  o: {
    stateDir?: string;
    maxGroups?: number;
    token?: string;
    reposDir?: string;
    allowUpstreams?: string[];
  } = {},
) {
  const stateDir = o.stateDir ?? join(tmp.path, `state-${++n}`);
  const h = await startServe({
    host: "127.0.0.1",
    port: 0,
    maxGroups: o.maxGroups ?? 4,
    ...(o.token ? { token: o.token } : {}),
    stateDir,
    tokenizer: tok,
    concurrency: 2,
    env: {},
    cwd: tmp.path,
    ...(o.reposDir ? { reposDir: o.reposDir } : {}),
    ...(o.allowUpstreams ? { allowUpstreams: o.allowUpstreams } : {}),
    depsFor: async () => deps,
    closeWaitMs: 10_000,
    retryAfterS: 3,
  });
  handles.push(h);
  return { h, stateDir };
}

const group = (id: string, size = 3) => ({ request_id: id, task: TASK, group_size: size, policy: "gold" });

/** POSTs (or GETs) and collects NDJSON lines until the stream ends, or `stopAfter` says stop. */
async function lines(
  url: string,
  init: RequestInit,
  stopAfter?: (l: StreamLine[]) => boolean,
): Promise<{ status: number; lines: StreamLine[]; headers: Headers; body?: unknown }> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error("stream took over 30 s")), 30_000);
  try {
    const res = await fetch(url, { ...init, signal: ctl.signal });
    if (res.status !== 200)
      return { status: res.status, lines: [], headers: res.headers, body: await res.json() };
    const out: StreamLine[] = [];
    let buf = "";
    const dec = new TextDecoder();
    let stopped = false;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += dec.decode(chunk, { stream: true });
        const parts = buf.split("\n");
        buf = parts.pop() ?? "";
        for (const l of parts) out.push(JSON.parse(l) as StreamLine);
        if (stopAfter?.(out)) {
          stopped = true;
          ctl.abort(new Error("the test disconnects"));
        }
      }
    } catch (err) {
      if (!stopped) throw err;
    }
    return { status: 200, lines: out, headers: res.headers };
  } finally {
    clearTimeout(timer);
  }
}

const post = (h: ServeHandle, body: unknown, stopAfter?: (l: StreamLine[]) => boolean) =>
  lines(
    `${h.url}/v1/groups`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    stopAfter,
  );
const trajectories = (ls: StreamLine[]) =>
  ls.flatMap((l) => (l.type === "trajectory" ? [l.trajectory_id] : [])).sort();
const doneOf = (ls: StreamLine[]) => ls.find((l) => l.type === "done");

describe("serve: pure decisions", () => {
  it("loopback hosts and bearer tokens", () => {
    expect(["127.0.0.1", "127.1.2.3", "::1", "localhost"].every(isLoopback)).toBe(true);
    expect(["0.0.0.0", "10.0.0.1", "::"].some(isLoopback)).toBe(false);
    expect(authorized(undefined, undefined)).toBe(true);
    expect(authorized("Bearer s3cret-token", "s3cret-token")).toBe(true);
    expect(authorized("Bearer s3cret-tokeX", "s3cret-token")).toBe(false);
    expect(authorized(undefined, "s3cret-token")).toBe(false);
  });

  it("the API schema is JSON Schema of the request and the stream lines", () => {
    const s = apiSchema();
    const req = s.schemas.GroupRequest as { properties: Record<string, unknown>; required: string[] };
    expect(req.required).toEqual(expect.arrayContaining(["request_id", "group_size"]));
    expect(Object.keys(req.properties)).toEqual(
      expect.arrayContaining(["task", "rows", "scenario", "inference", "sampling", "policy"]),
    );
    expect(JSON.stringify(s.schemas.StreamLine)).toContain("loss_mask");
  });

  it("a finished group is answered from disk, except a failed one resubmitted (it runs again)", () => {
    const request = { request_id: "r1", group_size: 2 } as never;
    type Stored = NonNullable<Parameters<typeof finishedGroupOf>[1]>;
    const stored = (status: "complete" | "failed" | "cancelled", expected?: number): Stored => ({
      request,
      records: [],
      errors: [],
      runId: "run-1",
      done: {
        type: "done" as const,
        request_id: "r1",
        status,
        trajectories: 0,
        ...(expected !== undefined ? { expected } : {}),
        detail: "why",
      },
    });
    expect(finishedGroupOf(request, undefined, true)).toBeUndefined();
    expect(finishedGroupOf(request, { ...stored("complete"), done: undefined }, false)).toBeUndefined();
    expect(finishedGroupOf(request, stored("failed"), true)).toBeUndefined();
    const failed = finishedGroupOf(request, stored("failed", 4), false)!;
    expect([failed.status, failed.runId, failed.expected, failed.detail]).toEqual([
      "failed",
      "run-1",
      4,
      "why",
    ]);
    const done = finishedGroupOf(request, stored("complete"), true)!;
    expect([done.status, done.expected]).toEqual(["complete", 0]);
  });

  it("a new group past --max-groups is a 429 with Retry-After", () => {
    expect(busyError(1, 2)).toBeUndefined();
    const e = busyError(2, 2, 7)!;
    expect([e.status, e.code, e.headers]).toEqual([429, "E_BUSY", { "retry-after": "7" }]);
    expect(e.message).toMatch(/2 group\(s\) running.*--max-groups 2\); retry after 7 s/);
    expect(busyError(3, 2)!.headers).toEqual({ "retry-after": "5" });
  });
});

describe("flakegym serve", () => {
  it("streams a group: accepted, every trajectory once, done; schema, auth and bad requests answered", async () => {
    const deps = createDummyDeps();
    const { h, stateDir } = await serve(deps, { token: "a-long-enough-token" });
    const auth = { authorization: "Bearer a-long-enough-token", "content-type": "application/json" };
    expect((await fetch(`${h.url}/v1/schema`)).status).toBe(401);
    const schema = (await (await fetch(`${h.url}/v1/schema`, { headers: auth })).json()) as {
      version: number;
    };
    expect(schema.version).toBe(1);
    const bad = await lines(`${h.url}/v1/groups`, { method: "POST", headers: auth, body: '{"task":"x"}' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toMatch(/field 'request_id'/);
    const unknown = await lines(`${h.url}/v1/groups`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ ...group("g-unknown"), task: "no-such-task" }),
    });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toMatch(/field 'task'/);

    const r = await lines(`${h.url}/v1/groups`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify(group("g1")),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/x-ndjson");
    expect(r.lines[0]).toMatchObject({ type: "accepted", request_id: "g1", status: "running" });
    expect(trajectories(r.lines)).toEqual([`${TASK}-t0`, `${TASK}-t1`, `${TASK}-t2`]);
    expect(doneOf(r.lines)).toMatchObject({ status: "complete", trajectories: 3 });
    const t = r.lines.find((l) => l.type === "trajectory")!;
    expect(t).toMatchObject({ reward: 1, outcome: { kind: "completed" }, task_id: TASK });
    expect(await readdir(join(stateDir, "requests", "g1", "records"))).toHaveLength(3);
    expect(deps.agentCalls.sort()).toEqual([`${TASK}-t0`, `${TASK}-t1`, `${TASK}-t2`]);
  });

  it("a trainer that disconnects mid-stream, resubmits twice at once, and GETs: one run, every answer whole", async () => {
    const deps = createDummyDeps({
      attempt: () => ({ outcome: { kind: "completed", detail: "ok" }, ms: 400 }),
    });
    const { h } = await serve(deps);
    const cut = await post(h, group("g2", 4), (ls) => ls.some((l) => l.type === "trajectory"));
    expect(trajectories(cut.lines).length).toBeLessThan(4);
    const [a, b] = await Promise.all([post(h, group("g2", 4)), post(h, group("g2", 4))]);
    for (const r of [a, b]) {
      expect(trajectories(r.lines)).toHaveLength(4);
      expect(doneOf(r.lines)).toMatchObject({ status: "complete" });
    }
    const again = await lines(`${h.url}/v1/groups/g2`, { method: "GET" });
    expect(again.lines[0]).toMatchObject({ type: "accepted", status: "complete", replayed: 4 });
    expect(trajectories(again.lines)).toEqual(trajectories(a.lines));
    expect(new Set(deps.agentCalls).size).toBe(deps.agentCalls.length);
    expect(deps.agentCalls).toHaveLength(4);
    // the same id with another body is refused
    const other = await post(h, group("g2", 2));
    expect(other.status).toBe(409);
  });

  it("a flood gets 429 with Retry-After beyond --max-groups; a cancelled group ends cancelled and stays so", async () => {
    const deps = createDummyDeps({
      attempt: () => ({ outcome: { kind: "completed", detail: "ok" }, ms: 2_000 }),
    });
    const { h } = await serve(deps, { maxGroups: 1 });
    const first = post(h, group("g3", 2));
    await expect.poll(() => deps.agentCalls.length, { timeout: 10_000 }).toBe(2);
    const flood = await Promise.all([1, 2, 3].map((i) => post(h, group(`flood-${i}`, 1))));
    for (const f of flood) {
      expect(f.status).toBe(429);
      expect(f.headers.get("retry-after")).toBe("3");
    }
    const del = await fetch(`${h.url}/v1/groups/g3`, { method: "DELETE" });
    expect(del.status).toBe(202);
    const r = await first;
    expect(doneOf(r.lines)).toMatchObject({ status: "cancelled" });
    const again = await post(h, group("g3", 2));
    expect(doneOf(again.lines)).toMatchObject({ status: "cancelled" });
    expect(deps.agentCalls.filter((x) => x.startsWith(TASK))).toHaveLength(2); // started once, never again
    expect((await fetch(`${h.url}/v1/groups/nothing-here`, { method: "DELETE" })).status).toBe(404);
  });

  it("--max-groups 1 and 6 simultaneous POSTs: one runs, five get 429 (admission checked and registered at once)", async () => {
    const deps = createDummyDeps({
      attempt: () => ({ outcome: { kind: "completed", detail: "ok" }, ms: 1_500 }),
    });
    const { h } = await serve(deps, { maxGroups: 1 });
    const health: unknown[] = [];
    const all = Promise.all(
      [1, 2, 3, 4, 5, 6].map((i) => post(h, group(`burst-${i}`, 1), (ls) => ls.length >= 1)),
    );
    await expect.poll(() => deps.agentCalls.length, { timeout: 10_000 }).toBeGreaterThan(0);
    health.push(await (await fetch(`${h.url}/healthz`)).json());
    const answers = await all;
    expect(answers.map((a) => a.status).sort()).toEqual([200, 429, 429, 429, 429, 429]);
    expect(health[0]).toMatchObject({ running: 1, capacity: 1 });
    expect(h.running()).toBeLessThanOrEqual(1);
  });

  it("GET /v1/groups/%E0%A4%A (a cut UTF-8 escape) is a 400 naming the id, not a 500", async () => {
    const { h } = await serve(createDummyDeps({}));
    const res = await fetch(`${h.url}/v1/groups/%E0%A4%A`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("E_REQUEST_ID");
    expect(body.error.message).toContain("percent-encoding");
    expect((await fetch(`${h.url}/v1/groups/%E0%A4%A`, { method: "DELETE" })).status).toBe(400);
  });

  it("a 5000-character value the client sent is never echoed whole in an error (id, bad escape, route, field)", async () => {
    const { h } = await serve(createDummyDeps({}));
    const long = "a".repeat(5000);
    const answers = await Promise.all([
      fetch(`${h.url}/v1/groups/${long}`),
      fetch(`${h.url}/v1/groups/${long}%E0%A4%A`, { method: "DELETE" }),
      fetch(`${h.url}/${long}`),
      fetch(`${h.url}/v1/groups`, {
        method: "POST",
        body: JSON.stringify({ request_id: "r1", task: long, group_size: 1 }),
      }),
      fetch(`${h.url}/v1/groups`, {
        method: "POST",
        body: JSON.stringify({ request_id: "r2", task: "t", inference: { base_url: `http://${long}` } }),
      }),
    ]);
    const texts: string[] = [];
    for (const res of answers) {
      const text = await res.text();
      texts.push(text);
      expect(res.status, text.slice(0, 300)).toBeGreaterThanOrEqual(400);
      expect(res.status, text.slice(0, 300)).toBeLessThan(500);
      expect(text.length, text.slice(0, 300)).toBeLessThan(1200);
      expect(text).not.toContain("a".repeat(200));
      // what it echoes is cut and says how long it was
      if (text.includes("a".repeat(60))) expect(text).toMatch(/…\(5\d{3} chars\)/);
    }
    // the id, the bad escape and the route did echo (cut), so the cut was exercised
    expect(texts.slice(0, 3).every((t) => /…\(5\d{3} chars\)/.test(t))).toBe(true);
  });

  it("malformed request targets and bad %-escapes on every route are 400s (or the route's own answer), never a 500", async () => {
    const { h } = await serve(createDummyDeps({}));
    const { port } = new URL(h.url);
    const raw = (method: string, target: string) =>
      new Promise<{ status: number; body: string }>((res, rej) => {
        const c = connect(Number(port), "127.0.0.1", () =>
          c.write(
            `${method} ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
          ),
        );
        let d = "";
        c.on("data", (b: Buffer) => {
          d += b.toString();
        });
        c.on("error", rej);
        c.on("close", () => res({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(d)?.[1] ?? 0), body: d }));
      });
    const targets = [
      ["GET", "http://["],
      ["GET", "http://x:99999/healthz"],
      ["POST", "http://[::1/v1/groups"],
      ["GET", "/v1/groups/%"],
      ["DELETE", "/v1/groups/%E0%A4%A"],
      ["GET", "/v1/groups/%2F..%2F"],
      ["GET", "/v1/schema?x=%"],
      ["GET", "/%ZZ"],
      ["POST", "/v1/groups/%C0"],
    ] as const;
    const answers = [];
    for (const [m, t] of targets) answers.push({ t, ...(await raw(m, t)) });
    for (const a of answers) {
      expect(a.status, `${a.t}: ${a.body}`).toBeGreaterThanOrEqual(200);
      expect(a.status, `${a.t}: ${a.body}`).toBeLessThan(500);
    }
    expect(answers[0]!.status).toBe(400);
    expect(answers[0]!.body).toContain("E_URL");
    // an absolute-form target with a good URL is served by its path
    expect((await raw("GET", `http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect((await raw("GET", "/v1/schema?x=%")).status).toBe(200);
  });

  it("a restarted server resumes a stopped group without rerunning finished trajectories, and answers finished groups from disk", async () => {
    const slowLast = createDummyDeps({
      attempt: (slot) => ({
        outcome: { kind: "completed", detail: "ok" },
        ms: slot.index === 2 ? 20_000 : 10,
      }),
    });
    const one = await serve(slowLast);
    const cut = await post(one.h, group("g4", 3), (ls) => trajectories(ls).length === 2);
    expect(trajectories(cut.lines)).toHaveLength(2);
    await one.h.close();
    handles.splice(handles.indexOf(one.h), 1);

    const fresh = createDummyDeps();
    const two = await serve(fresh, { stateDir: one.stateDir });
    const r = await post(two.h, group("g4", 3));
    expect(trajectories(r.lines)).toEqual([`${TASK}-t0`, `${TASK}-t1`, `${TASK}-t2`]);
    expect(doneOf(r.lines)).toMatchObject({ status: "complete" });
    expect(fresh.agentCalls).toEqual([`${TASK}-t2`]); // only the one that had not finished
    await two.h.close();
    handles.splice(handles.indexOf(two.h), 1);

    const never = createDummyDeps({ attempt: () => ({ throws: new Error("must not run") }) });
    const three = await serve(never, { stateDir: one.stateDir });
    const disk = await post(three.h, group("g4", 3));
    expect(disk.lines[0]).toMatchObject({ status: "complete", replayed: 3 });
    expect(disk.lines.filter((l) => l.type === "trajectory")).toEqual(
      r.lines.filter((l) => l.type === "trajectory"),
    );
    expect(never.agentCalls).toEqual([]);
  });
});

describe("serve: one odd trajectory", () => {
  it("replay: truncation's repeated prompts are segments; a record that cannot be built is a trajectory_error line, the rest stream, and the group is not complete", async () => {
    const deps = createDummyDeps({
      turnLog: (slot) =>
        slot.index === 1 ? "{ not a turn record\n" : truncationReplay(tok, slot.trajectoryId),
    });
    const { h, stateDir } = await serve(deps);
    const r = await post(h, group("g-odd", 3));
    expect(trajectories(r.lines)).toEqual([`${TASK}-t0`, `${TASK}-t2`]);
    const t0 = r.lines.find((l) => l.type === "trajectory" && l.index === 0);
    expect(t0?.type === "trajectory" && t0.segments.map((s) => s.split?.kind ?? null)).toEqual([
      null,
      "prompt_shrunk",
      "prompt_repeated",
    ]);
    const err = r.lines.find((l) => l.type === "trajectory_error");
    expect(err).toMatchObject({
      type: "trajectory_error",
      trajectory_id: `${TASK}-t1`,
      task_id: TASK,
      index: 1,
    });
    const done = doneOf(r.lines);
    expect(done).toMatchObject({ status: "failed", trajectories: 2, expected: 3 });
    expect(done?.type === "done" && done.excluded?.map((x) => x.trajectory_id)).toEqual([`${TASK}-t1`]);
    expect(done?.type === "done" && done.detail).toMatch(
      /^2 of 3 trajectories have a record; 1 finished without one/,
    );
    expect(await readdir(join(stateDir, "requests", "g-odd", "errors"))).toEqual([`${TASK}-t1.json`]);
    // not final: a resubmission replays what streamed, retries the missing record, runs nothing again
    const again = await post(h, group("g-odd", 3));
    expect(again.lines[0]).toMatchObject({ type: "accepted", replayed: 2 });
    expect(again.lines.filter((l) => l.type === "trajectory_error")).toHaveLength(1);
    expect(doneOf(again.lines)).toMatchObject({ status: "failed", trajectories: 2, expected: 3 });
    expect(deps.agentCalls.sort()).toEqual([`${TASK}-t0`, `${TASK}-t1`, `${TASK}-t2`]);
    // `flakegym export` of the same run from its turn logs: the other trajectories are written,
    // the odd one is left out with its reason
    const runDir = join(stateDir, "requests", "g-odd", "run");
    const exported = await exportRun({
      runDir,
      format: "verl",
      segments: "final",
      out: join(stateDir, "verl.jsonl"),
      tokenizer: TOKENIZERS.qwen3,
    });
    expect(exported.records).toBe(2);
    expect(exported.excluded.map((x) => x.trajectory_id)).toEqual([`${TASK}-t1`]);
  });
});

describe("serve: two servers on one state dir", () => {
  it("a group one server runs is refused by the other (409 naming the holder); once done, both answer it from disk", async () => {
    const deps = createDummyDeps({
      attempt: () => ({ outcome: { kind: "completed", detail: "ok" }, ms: 1_500 }),
    });
    const one = await serve(deps);
    const idle = createDummyDeps({ attempt: () => ({ throws: new Error("must not run") }) });
    const two = await serve(idle, { stateDir: one.stateDir });
    const first = post(one.h, group("shared", 2));
    await expect.poll(() => deps.agentCalls.length, { timeout: 10_000 }).toBe(2);
    const refused = await post(two.h, group("shared", 2));
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: {
        code: "E_RUN_LOCKED",
        message: expect.stringMatching(/in use by flakegym serve \(pid \d+ on /),
      },
    });
    expect(doneOf((await first).lines)).toMatchObject({ status: "complete", trajectories: 2 });
    const later = await post(two.h, group("shared", 2));
    expect(later.lines[0]).toMatchObject({ status: "complete", replayed: 2 });
    expect(idle.agentCalls).toEqual([]);
    expect(await readdir(join(one.stateDir, "requests", "shared"))).not.toContain("run.lock");
  });
});

/** The SWE-bench-style fixture rows (the ones `tasks import` and `rollout --dataset` tests read). */
const SWEBENCH_DIR = fileURLToPath(new URL("../../../../tests/fixtures/swebench/", import.meta.url));
async function fixtureRows(): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(SWEBENCH_DIR, "swebench-sample.jsonl"), "utf8");
  return text.split("\n").flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}
const rowById = (rows: Record<string, unknown>[], id: string) => rows.find((r) => r.instance_id === id)!;

describe("serve: the trainer's inference endpoint", () => {
  it("is refused (400 E_UPSTREAM, naming the field) unless the operator allowed it; nothing is kept of a refused request", async () => {
    const deps = createDummyDeps();
    const inference = (id: string, base_url: string) => ({
      request_id: id,
      task: TASK,
      group_size: 1,
      inference: { base_url, model: "m" },
    });
    const { h, stateDir } = await serve(deps, { allowUpstreams: ["http://10.0.0.7:8000/v1"] });
    const meta = await post(h, inference("up-meta", "http://169.254.169.254/v1"));
    expect(meta.status).toBe(400);
    expect(meta.body).toMatchObject({
      error: { code: "E_UPSTREAM", message: expect.stringContaining("field 'inference.base_url'") },
    });
    expect(existsSync(join(stateDir, "requests", "up-meta"))).toBe(false);
    const ok = await post(h, inference("up-ok", "http://10.0.0.7:8000/v1"));
    expect(ok.status).toBe(200);
    expect(doneOf(ok.lines)).toMatchObject({ status: "complete" });
    const none = await serve(createDummyDeps());
    const refused = await post(none.h, inference("up-none", "http://10.0.0.7:8000/v1"));
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("--allow-upstream");
  });
});

describe("serve: a failed group", () => {
  it("is resumed when resubmitted: what finished is kept, the rest runs; a complete group never runs again", async () => {
    const deps = createDummyDeps();
    let calls = 0;
    const stateDir = join(tmp.path, `state-${++n}`);
    const h = await startServe({
      host: "127.0.0.1",
      port: 0,
      maxGroups: 2,
      stateDir,
      tokenizer: tok,
      concurrency: 2,
      env: {},
      cwd: tmp.path,
      depsFor: async () => {
        if (++calls === 1) throw new Error("the backend is down");
        return deps;
      },
      closeWaitMs: 10_000,
    });
    handles.push(h);
    const first = await post(h, group("g-fail", 2));
    expect(doneOf(first.lines)).toMatchObject({ status: "failed", detail: "the backend is down" });
    expect(deps.agentCalls).toEqual([]);
    // the verdict is on disk and the server keeps no failed group in memory: a GET reads it, runs nothing
    expect(
      JSON.parse(await readFile(join(stateDir, "requests", "g-fail", "done.json"), "utf8")),
    ).toMatchObject({
      status: "failed",
    });
    const read = await lines(`${h.url}/v1/groups/g-fail`, { method: "GET" });
    expect(doneOf(read.lines)).toMatchObject({ status: "failed", detail: "the backend is down" });
    expect(calls).toBe(1);
    const again = await post(h, group("g-fail", 2));
    expect(doneOf(again.lines)).toMatchObject({ status: "complete", trajectories: 2 });
    const third = await post(h, group("g-fail", 2));
    expect(third.lines[0]).toMatchObject({ status: "complete", replayed: 2 });
    expect(deps.agentCalls.sort()).toEqual([`${TASK}-t0`, `${TASK}-t1`]);
    expect(calls).toBe(2);
  });
});

describe("serve: dataset rows and scenarios", () => {
  it("parseRows: the importer's tasks, local repositories only under --repos-dir, every bad row named", async () => {
    const rows = await fixtureRows();
    const good = [rowById(rows, "minicalc__minicalc-1"), rowById(rows, "Acme__Widgets-7")];
    const ok = parseRows(good, SWEBENCH_DIR);
    expect(ok.ok && ok.tasks.map((t) => [t.spec.id, t.spec.network])).toEqual([
      ["minicalc__minicalc-1", "none"],
      ["acme__widgets-7", "required"],
    ]);
    const noDir = parseRows(good, undefined);
    expect(noDir.ok ? [] : noDir.problems).toEqual([
      { row: 1, field: "repo", reason: expect.stringMatching(/--repos-dir/), id: "minicalc__minicalc-1" },
    ]);
    const bad = parseRows(
      [
        good[1],
        rowById(rows, "minicalc__minicalc-2"),
        { id: "swe-agent-row", conversations: [] },
        { ...good[0], repo: "../../elsewhere" },
        good[1],
      ],
      SWEBENCH_DIR,
    );
    expect(bad.ok ? [] : bad.problems).toEqual([
      {
        row: 2,
        field: "base_commit",
        reason: expect.stringMatching(/not a full commit id/),
        id: "minicalc__minicalc-2",
      },
      { row: 3, field: "instance_id", reason: expect.stringMatching(/SWE-bench-style rows/) },
      {
        row: 4,
        field: "repo",
        reason: expect.stringMatching(/outside the server's --repos-dir/),
        id: "minicalc__minicalc-1",
      },
      {
        row: 5,
        field: "instance_id",
        reason: "task id 'acme__widgets-7' is row 1's too",
        id: "Acme__Widgets-7",
      },
    ]);
    expect(inlineScenarioId({ a: 1 })).toMatch(/^inline-[0-9a-f]{12}$/);
  });

  it("bad rows are a 400 naming row, field and reason, and nothing starts; good rows run as catalog tasks", async () => {
    const rows = await fixtureRows();
    const deps = createDummyDeps();
    const { h, stateDir } = await serve(deps, { reposDir: SWEBENCH_DIR });
    const good = [rowById(rows, "minicalc__minicalc-1"), rowById(rows, "Acme__Widgets-7")];
    const bad = await post(h, {
      request_id: "rows-bad",
      rows: [good[0], rowById(rows, "minicalc__minicalc-2")],
      group_size: 2,
      policy: "gold",
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: {
        code: "E_ROWS",
        message: expect.stringMatching(/row 2 field 'base_commit'/),
        rows: [{ row: 2, field: "base_commit", id: "minicalc__minicalc-2" }],
      },
    });
    expect(await readdir(join(stateDir, "requests")).catch(() => [])).toEqual([]);
    expect(deps.agentCalls).toEqual([]);
    const both = await post(h, { ...group("rows-both"), rows: good });
    expect(both.status).toBe(400);
    expect(JSON.stringify(both.body)).toMatch(/exactly one of `task`/);

    const r = await post(h, { request_id: "rows-ok", rows: good, group_size: 2, policy: "gold" });
    expect(r.status).toBe(200);
    expect(trajectories(r.lines)).toEqual([
      "acme__widgets-7-t0",
      "acme__widgets-7-t1",
      "minicalc__minicalc-1-t0",
      "minicalc__minicalc-1-t1",
    ]);
    expect(doneOf(r.lines)).toMatchObject({ status: "complete", trajectories: 4 });
    // the rows became catalog tasks with hidden tests and a reference solution, beside the run
    const catalog = join(stateDir, "requests", "rows-ok", "catalog");
    const t = await loadTask("minicalc__minicalc-1", catalog);
    expect(t.spec.tests).toMatchObject({ patch: "tests.patch" });
    expect(t.spec.source).toMatchObject({ kind: "git", url: join(SWEBENCH_DIR, "minicalc") });
  });

  it("scenarios: a built-in id or an inline spec compile to a task; an unknown id is a 400", async () => {
    const deps = createDummyDeps();
    const { h, stateDir } = await serve(deps);
    const unknown = await post(h, {
      request_id: "sc-x",
      scenario: "no-such-scenario",
      group_size: 1,
      policy: "empty",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({
      error: { code: "E_SCENARIO", message: expect.stringMatching(/field 'scenario'.*create-file/) },
    });
    const files = await post(h, {
      request_id: "sc-files",
      scenario: {
        version: 1,
        summary: "s",
        prompt: "p",
        template: "/etc",
        checks: [{ kind: "file_exists", path: "a" }],
      },
      group_size: 1,
      policy: "empty",
    });
    expect(files.status).toBe(400);

    const builtin = await post(h, {
      request_id: "sc-1",
      scenario: "create-file",
      group_size: 1,
      policy: "gold",
    });
    expect(trajectories(builtin.lines)).toEqual(["create-file-t0"]);
    const compiled = await loadTask("create-file", join(stateDir, "requests", "sc-1", "catalog"));
    expect(compiled.spec.tests).toMatchObject({ dir: "hidden" });

    const spec = {
      version: 1,
      summary: "write hello.txt",
      prompt: "Create hello.txt containing hello",
      checks: [{ kind: "content", path: "hello.txt", must_match: ["^hello$"] }],
    };
    const inline = await post(h, { request_id: "sc-2", scenario: spec, group_size: 2, policy: "empty" });
    expect(doneOf(inline.lines)).toMatchObject({ status: "complete", trajectories: 2 });
    const id = trajectories(inline.lines)[0]!.replace(/-t0$/, "");
    expect(id).toMatch(/^inline-[0-9a-f]{12}$/);
    expect((await loadTask(id, join(stateDir, "requests", "sc-2", "catalog"))).spec.prompt).toBe(spec.prompt);
  });
});
