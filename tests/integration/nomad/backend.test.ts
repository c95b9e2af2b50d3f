import { createNomadBackend, createNomadClient, FlakegymError, http2Probe, nomadVar } from "@flakegym/runner";
import { describe, expect, it } from "vitest";
import { IMAGE, nomadBackendHarness, rejection } from "./backend-harness.js";

/**
 * The Nomad backend against the in-process Nomad API double: real HTTP, real blocking queries,
 * real task processes and listeners. After every test the double's job table must be empty and
 * no task may still run: the backend never leaks a job, whatever happened.
 */

const { setup, spec, track } = nomadBackendHarness({ runId: "run-1", memoryMb: 2048 });

describe("NomadBackend against the Nomad double", () => {
  it("start dispatches a worker, waits for the core to answer on its dynamic port, stop purges", async () => {
    const { double, backend, events } = await setup();
    const w = await backend.start(spec({ trajectoryId: "t-main" }));
    expect(w.backend).toBe("nomad");
    expect(w.agentAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    // The double's task really serves HTTP/2 there.
    expect(await http2Probe(w.agentAddress!, { signal: AbortSignal.timeout(2_000), timeoutMs: 1_000 })).toBe(
      true,
    );
    expect(w.policyBaseUrl).toBe("http://10.9.8.7:8089/v1");

    const jobs = double.jobs();
    const parent = jobs.find((j) => j.ParentID === "")!;
    const child = jobs.find((j) => j.ParentID !== "")!;
    expect(jobs).toHaveLength(2);
    expect(child.ParentID).toBe(parent.ID);
    expect(child.ID).toMatch(new RegExp(`^${parent.ID}/dispatch-t-main-\\d+-[0-9a-f]{8}$`));
    expect(child.Meta).toMatchObject({
      flakegym_run: "run-1",
      flakegym_task: "demo-task",
      flakegym_trajectory: "t-main",
      // the trajectory's gateway route travels with the dispatch (the parent stays shared)
      flakegym_policy_url: "http://10.9.8.7:8089/v1",
    });
    const env = (child.spec.TaskGroups as { Tasks: { Env: Record<string, string> }[] }[])[0]!.Tasks[0]!.Env;
    expect(env.FLAKEGYM_POLICY_BASE_URL).toBe(nomadVar("NOMAD_META_flakegym_policy_url"));
    // no secret in the spec: the core token is the dispatch's own (meta), referenced, never inlined
    expect(Object.keys(env).filter((k) => /TOKEN|SECRET|KEY/.test(k))).toEqual(["FLAKEGYM_CORE_TOKEN"]);
    expect(env.FLAKEGYM_CORE_TOKEN).toBe(nomadVar("NOMAD_META_flakegym_core_token"));
    expect(child.Meta?.flakegym_core_token).toBe(w.agentToken);

    const kinds = events.map((e) => e.kind);
    for (const k of ["registered", "dispatched", "placed", "task-event", "ready"]) expect(kinds).toContain(k);

    await w.stop();
    await w.stop(); // idempotent
    expect(double.jobs()).toEqual([]);
    expect(backend.liveJobs()).toEqual([]);
  });

  it("a group of workers shares one parent job; each is its own dispatch with its own port", async () => {
    const { double, backend } = await setup();
    const workers = await Promise.all(
      [1, 2, 3, 4].map((i) => backend.start(spec({ trajectoryId: `g-${i}` }))),
    );
    const jobs = double.jobs();
    expect(jobs.filter((j) => j.ParentID === "")).toHaveLength(1);
    expect(jobs.filter((j) => j.ParentID !== "")).toHaveLength(4);
    expect(new Set(workers.map((w) => w.agentAddress)).size).toBe(4);
    // Stopping one leaves the others (and the shared parent) alone.
    await workers[0]!.stop();
    expect(double.jobs()).toHaveLength(4);
    await Promise.all(workers.slice(1).map((w) => w.stop()));
    expect(double.jobs()).toEqual([]);
  });

  it("a failed allocation is reported with its task events, and the job is purged", async () => {
    const { double, backend } = await setup({
      runTask: () => ({
        kind: "driver-failure",
        message: "Failed to pull `oci.example/x`: manifest unknown",
      }),
    });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_ALLOC_FAILED");
    expect(e.message).toContain("failed before its core answered");
    expect(e.message).toContain(
      "task worker: Driver Failure: Failed to pull `oci.example/x`: manifest unknown",
    );
    expect(e.hint).toContain("task driver could not start the worker");
    expect(double.jobs()).toEqual([]);
  });

  it("a worker that exits before its core answers: exit code and the stderr tail are in the error", async () => {
    const { backend } = await setup({
      runTask: () => ({
        kind: "exec",
        argv: ["/bin/sh", "-c", "echo 'cline-core: cannot bind' >&2; exit 3"],
      }),
    });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_ALLOC_FAILED");
    expect(e.message).toContain("Terminated: Exit Code: 3");
    expect(e.message).toContain("cline-core: cannot bind");
    expect(e.hint).toContain("nomad alloc logs -stderr");
  });

  it("an allocation lost while the core boots is reported as lost", async () => {
    const { double, backend } = await setup({ runTask: () => ({ kind: "hang" }) });
    const p = backend.start(spec());
    await double.waitFor(() =>
      double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "running"),
    );
    const alloc = double
      .allocations()
      .find((a) => (a as { ClientStatus: string }).ClientStatus === "running") as { ID: string };
    await double.loseAllocation(alloc.ID);
    const e = await rejection(p);
    expect(e.code).toBe("E_NOMAD_ALLOC_LOST");
    expect(e.message).toContain("is lost (alloc is lost since its node is down)");
    expect(e.hint).toContain("infra_error");
  });

  it("a running allocation whose core never answers fails at the deadline, naming the address", async () => {
    const { backend } = await setup({ runTask: () => ({ kind: "hang" }) }, { startTimeoutMs: 700 });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_NOT_READY");
    expect(e.message).toMatch(/nothing answered gRPC at 127\.0\.0\.1:\d+ within 700 ms/);
    expect(e.hint).toContain("PROTOBUS_ADDRESS");
  });

  it("a job no node can run fails fast with the scheduler's reason", async () => {
    const { backend } = await setup({ drivers: ["raw_exec"] });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_PLACEMENT");
    expect(e.message).toContain("1 filtered by 'missing drivers'");
    expect(e.hint).toContain("task driver");
  });

  it("slow placement past the start deadline times out and purges", async () => {
    const { backend } = await setup({ placementDelayMs: 3_000 }, { startTimeoutMs: 400 });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_START_TIMEOUT");
    expect(e.message).toContain("no allocation was placed");
  });

  it("Ctrl-C during start stops waiting and purges what was dispatched", async () => {
    const { double, backend } = await setup({ placementDelayMs: 2_000 });
    const ac = new AbortController();
    const p = backend.start(spec(), ac.signal);
    await double.waitFor(() => double.jobs().some((j) => j.ParentID !== ""));
    const reason = new FlakegymError("E_INTERRUPTED", "interrupted by SIGINT");
    ac.abort(reason);
    // The CLI's interrupt comes back as itself, not as some Nomad error.
    expect(await rejection(p)).toBe(reason);
    // Any other abort reason becomes E_INTERRUPTED, naming what was interrupted.
    const ac2 = new AbortController();
    const p2 = backend.start(spec(), ac2.signal);
    await double.waitFor(() => double.jobs().filter((j) => j.ParentID !== "").length === 1);
    ac2.abort(new Error("stop"));
    const e2 = await rejection(p2);
    expect(e2.code).toBe("E_INTERRUPTED");
    expect(e2.message).toMatch(/^starting a Nomad worker for trajectory traj-\d+: interrupted$/);
  });

  it("a dispatch whose answer was lost is resent with its idempotency token: one worker, not two", async () => {
    const { double, backend } = await setup();
    double.loseAnswerNext(1, { method: "POST", path: /\/dispatch$/ });
    const w = await backend.start(spec());
    const dispatches = double.requests.filter((r) => r.path.endsWith("/dispatch"));
    expect(dispatches).toHaveLength(2);
    expect(dispatches[0]!.query.get("idempotency_token")).toBeTruthy();
    expect(dispatches[1]!.query.get("idempotency_token")).toBe(dispatches[0]!.query.get("idempotency_token"));
    expect(double.jobs().filter((j) => j.ParentID !== "")).toHaveLength(1);
    await w.stop();
  });

  it("5xx answers on reads and on token-carrying dispatches are retried", async () => {
    const { double, backend } = await setup();
    double.failNext(2, 500, "rpc error: No cluster leader", { method: "POST", path: /\/dispatch$/ });
    double.failNext(2, 503, "overloaded", { method: "GET", path: /^\/v1\/allocation\// });
    const w = await backend.start(spec());
    expect(double.jobs().filter((j) => j.ParentID !== "")).toHaveLength(1);
    await w.stop();
  });

  it("a register rejected by Nomad is not retried and the error carries Nomad's message", async () => {
    const { double, backend } = await setup();
    double.failNext(1, 500, "1 error occurred:\n\t* Task group worker validation failed", {
      method: "POST",
      path: /^\/v1\/jobs$/,
    });
    const e = await rejection(backend.start(spec()));
    expect(e.message).toContain("Task group worker validation failed");
    expect(double.requests.filter((r) => r.path === "/v1/jobs" && r.method === "POST")).toHaveLength(1);
  });

  it("exec runs a command in a fresh allocation: exit code, stdout, stderr, cwd and env", async () => {
    const { double, backend } = await setup();
    const w = await backend.start(spec({ agent: false }));
    expect(w.agentAddress).toBeUndefined();
    const r = await w.exec("echo out; echo err >&2; exit 3");
    expect(r).toMatchObject({ exitCode: 3, stdout: "out\n", stderr: "err\n", timedOut: false });
    expect(double.jobs()).toEqual([]);
    const r2 = await w.exec('mkdir -p sub && cd sub && printf "%s|%s" "$(basename "$PWD")" "$GREETING"', {
      env: { GREETING: "hi there" },
    });
    expect(r2).toMatchObject({ exitCode: 0, stdout: "sub|hi there" });
    // Each exec is a fresh allocation: nothing carries over.
    const r3 = await w.exec("test -d sub && echo leaked || echo fresh");
    expect(r3.stdout).toBe("fresh\n");
    await w.stop();
  });

  it("exec past its timeout is killed and purged, reporting timedOut with what it printed", async () => {
    const { double, backend } = await setup();
    const w = await backend.start(spec({ agent: false }));
    const r = await w.exec("echo started; sleep 30", { timeoutMs: 600 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBe(137);
    expect(r.stdout).toBe("started\n");
    await double.waitFor(() => double.liveTasks() === 0, 5_000);
    await w.stop();
  });

  it("an exec Nomad killed from outside (a stop, a lost node) is sandboxKilled; one whose command killed itself is not", async () => {
    const { double, backend } = await setup();
    const w = await backend.start(spec({ agent: false }));
    const execAlloc = async () => {
      await double.waitFor(() =>
        double.allocations().some((a) => a.JobID.includes("-exec-") && a.ClientStatus === "running"),
      );
      return double.allocations().find((a) => a.JobID.includes("-exec-") && a.ClientStatus === "running")!;
    };
    const stopped = w.exec("echo started; sleep 30", { timeoutMs: 60_000 });
    const a = await execAlloc();
    await createNomadClient({ address: double.url }).jobs.deregister(a.JobID);
    expect(await stopped).toMatchObject({ sandboxKilled: true, timedOut: false });

    // caught at once: it may reject while the loss is still being reported
    const lost = w.exec("sleep 30", { timeoutMs: 60_000 }).catch((e: unknown) => e);
    await double.loseAllocation((await execAlloc()).ID);
    // a lost allocation either reports its killed task (sandboxKilled) or is an infra error: never a plain result
    const r = await lost;
    if (!(r instanceof Error)) expect(r).toMatchObject({ sandboxKilled: true });

    const own = await w.exec("kill -9 $$");
    expect(own.exitCode).toBe(137);
    expect(own.sandboxKilled).toBeUndefined();
    await w.stop();
  });

  it("exec whose task cannot even start is an infrastructure error, not a result", async () => {
    const { backend } = await setup({
      runTask: () => ({ kind: "driver-failure", message: "image not found" }),
    });
    const w = await backend.start(spec({ agent: false }));
    const e = await rejection(w.exec("true"));
    expect(e.code).toBe("E_NOMAD_ALLOC_FAILED");
    expect(e.message).toContain("before the command ran");
    await w.stop();
  });

  it("sweeps orphaned jobs of this run and expired ones at the first start, and nothing else", async () => {
    const { double, client, backend, events } = await setup();
    const job = (id: string, run: string, expires: number) => ({
      ID: id,
      Type: "batch" as const,
      Meta: { flakegym_run: run, flakegym_expires: String(expires) },
      TaskGroups: [{ Name: "g", Tasks: [{ Name: "t", Driver: "docker", Config: { image: IMAGE } }] }],
    });
    const future = Date.now() + 3_600_000;
    await client.jobs.register(job("flakegym-run-1-leftover", "run-1", future));
    await client.jobs.register(job("flakegym-old-expired", "run-0", Date.now() - 1_000));
    await client.jobs.register(job("flakegym-other-live", "run-9", future));
    await client.jobs.register(job("someone-elses-job", "run-1", 1));
    const w = await backend.start(spec());
    const left = double.jobs().map((j) => j.ID);
    expect(left).toContain("flakegym-other-live");
    expect(left).toContain("someone-elses-job");
    expect(left).not.toContain("flakegym-run-1-leftover");
    expect(left).not.toContain("flakegym-old-expired");
    expect(events.find((e) => e.kind === "swept")).toEqual({
      kind: "swept",
      purged: ["flakegym-old-expired", "flakegym-run-1-leftover"],
    });
    await w.stop();
    await client.jobs.deregister("flakegym-other-live", { purge: true });
    await client.jobs.deregister("someone-elses-job", { purge: true });
  });

  it("refuses a loopback gateway before creating anything", async () => {
    const { double, backend } = await setup({}, { gatewayAdvertise: undefined });
    const e = await rejection(backend.start(spec()));
    expect(e.code).toBe("E_NOMAD_GATEWAY");
    expect(e.hint).toContain("--gateway-advertise");
    expect(double.requests).toHaveLength(0);
  });

  it("an ACL token is sent; without it Nomad's 403 comes with a hint", async () => {
    const { double, backend } = await setup({ token: "s3cret" }, {}, { token: "s3cret" });
    const w = await backend.start(spec());
    await w.stop();
    const noToken = createNomadBackend(
      { driver: { driver: "docker" }, gatewayAdvertise: "10.9.8.7:8089" },
      { client: createNomadClient({ address: double.url }) },
    );
    track(noToken);
    const e = await rejection(noToken.start(spec({ runId: "run-2" })));
    expect(e.message).toContain("403");
    expect(e.hint).toContain("NOMAD_TOKEN");
  });

  it("close() purges the jobs of workers nobody stopped", async () => {
    const { double, backend } = await setup();
    await backend.start(spec());
    const cmd = await backend.start(spec({ agent: false }));
    const pending = cmd.exec("sleep 20", { timeoutMs: 60_000 });
    await double.waitFor(() => double.jobs().some((j) => j.Meta.flakegym_kind === "exec"));
    await backend.close();
    expect(double.jobs()).toEqual([]);
    await expect(pending).rejects.toThrow();
    await expect(backend.start(spec())).rejects.toThrow("closed");
  });

  it("exited says why a running worker ended: stopped, lost (crashed), or its wall clock", async () => {
    const { double, backend } = await setup({}, { startTimeoutMs: 1_500, graceMs: 0 });
    const a = await backend.start(spec());
    await a.stop();
    expect(await a.exited).toEqual({ reason: "stopped" });

    const b = await backend.start(spec());
    const alloc = double
      .allocations()
      .find(
        (x) => (x as { JobID: string; ClientStatus: string }).JobID === (b as { jobId?: string }).jobId,
      ) as {
      ID: string;
    };
    await double.loseAllocation(alloc.ID);
    const lost = await b.exited!;
    expect(lost.reason).toBe("crashed");
    expect(lost.detail).toContain("is lost (alloc is lost since its node is down)");
    await b.stop();

    // MaxRunDuration = wall clock (100 ms) + start timeout (1.5 s) + grace (0): Nomad stops it.
    const c = await backend.start(spec({ limits: { memoryMb: 1024, pids: 64, wallClockMs: 100 } }));
    const ended = await c.exited!;
    expect(ended.reason).toBe("wall_clock");
    expect(ended.detail).toContain("allocation exceeded max_run_duration");
    await c.stop();
  });

  it("describe() reports the address, version and leader", async () => {
    const { backend, double } = await setup();
    const d = await backend.describe();
    expect(d).toMatchObject({
      backend: "nomad",
      nomad_addr: double.url,
      nomad_version: "2.0.6",
      driver: "docker",
    });
    expect(d.nomad_leader).toBe("127.0.0.1:4647");
  });
});
