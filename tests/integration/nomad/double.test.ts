import { createNomadClient, type NomadClient, NomadError } from "@flakegym/runner";
import { DOCUMENTED_CAPABILITIES, type NomadDouble, startNomadDouble } from "@flakegym/test-utils";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The Nomad double follows Nomad's documented behaviour: these pin the parts the backend relies
 * on, through the real client, so a drift in the double shows up here and not as a backend bug.
 */

let double: NomadDouble | undefined;
let client: NomadClient | undefined;
afterEach(async () => {
  client?.close();
  await double?.close();
  double = undefined;
});

async function setup(opts: Parameters<typeof startNomadDouble>[0] = {}) {
  double = await startNomadDouble(opts);
  client = createNomadClient({ address: double.url, retry: { attempts: 1 } });
  return { double, client };
}

// SIGTERM: a test runner may start its children with SIGINT ignored, Nomad's default kill signal.
const shJob = (id: string, script: string, extra: Record<string, unknown> = {}) => ({
  ID: id,
  Type: "batch" as const,
  TaskGroups: [
    {
      Name: "g",
      RestartPolicy: { Attempts: 0, Mode: "fail" as const },
      Tasks: [
        {
          Name: "t",
          Driver: "raw_exec",
          KillSignal: "SIGTERM",
          Config: { command: "/bin/sh", args: ["-c", script] } as Record<string, unknown>,
          Resources: undefined as { MemoryMB?: number } | undefined,
        },
      ],
      ...extra,
    },
  ],
});

async function httpError(p: Promise<unknown>): Promise<NomadError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(NomadError);
    return e as NomadError;
  }
  throw new Error("expected a NomadError");
}

describe("Nomad double fidelity", () => {
  it("register validates like the server (500 with a multierror body) and EnforceIndex 0 is create-only", async () => {
    const { client } = await setup();
    const tiny = shJob("x", "true");
    tiny.TaskGroups[0]!.Tasks[0]!.Resources = { MemoryMB: 5 } as never;
    const e = await httpError(client.jobs.register(tiny));
    expect(e.status).toBe(500);
    expect(e.body).toContain("1 error occurred:");
    expect(e.body).toContain("minimum MemoryMB value is 10; got 5");
    const pj = { ...shJob("p", "true"), Type: "service" as const, ParameterizedJob: {} };
    expect((await httpError(client.jobs.register(pj))).body).toContain(
      'Parameterized job can only be used with "batch"',
    );
    await client.jobs.register(shJob("once", "sleep 5"), { enforceIndex: 0 });
    expect((await httpError(client.jobs.register(shJob("once", "sleep 5"), { enforceIndex: 0 }))).body).toBe(
      "Enforcing job modify index 0: job already exists",
    );
    await client.jobs.deregister("once", { purge: true });
  });

  it("runs a raw_exec task through pending → running → complete, with task events, logs and events", async () => {
    const { double, client } = await setup();
    const ac = new AbortController();
    const frames: string[] = [];
    const streaming = (async () => {
      for await (const f of client.events.stream(
        { topics: { Allocation: ["hello"] } },
        { signal: ac.signal },
      )) {
        for (const e of f.Events)
          frames.push((e.Payload as { Allocation: { ClientStatus: string } }).Allocation.ClientStatus);
      }
    })();
    await client.jobs.register(shJob("hello", 'echo "hi from $NOMAD_JOB_ID"; echo oops >&2; sleep 0.2'));
    await double.waitFor(() =>
      double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "complete"),
    );
    const [stub] = (await client.jobs.allocations("hello")).data;
    const alloc = (await client.allocations.info(stub!.ID)).data;
    expect(alloc.ClientStatus).toBe("complete");
    expect(alloc.TaskStates.t!.Events.map((e) => e.Type)).toEqual([
      "Received",
      "Task Setup",
      "Started",
      "Terminated",
    ]);
    expect(alloc.TaskStates.t!.Events.at(-1)).toMatchObject({ ExitCode: 0, Details: { exit_code: "0" } });
    expect((await client.logs.read(alloc.ID, { task: "t", type: "stdout" })).data).toBe("hi from hello\n");
    expect((await client.logs.read(alloc.ID, { task: "t", type: "stderr" })).data).toBe("oops\n");
    await double.waitFor(() => frames.includes("complete"));
    ac.abort();
    await streaming;
    expect(frames[0]).toBe("pending");
    expect(frames).toContain("running");
    expect((await client.jobs.info("hello")).data.Status).toBe("dead");
    await client.jobs.deregister("hello", { purge: true });
  });

  it("blocking queries hold until the index passes or the wait elapses, and answer X-Nomad-Index", async () => {
    const { double, client } = await setup();
    await client.jobs.register(shJob("blk", "sleep 30"));
    await double.waitFor(() =>
      double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "running"),
    );
    const [stub] = (await client.jobs.allocations("blk")).data;
    const first = await client.allocations.info(stub!.ID);
    // Nothing changes: held for the whole wait, same index back.
    const t0 = Date.now();
    const same = await client.allocations.info(stub!.ID, { index: first.meta.index!, waitMs: 300 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(280);
    expect(same.meta.index).toBe(first.meta.index);
    // A change wakes it early.
    const t1 = Date.now();
    const woke = client.allocations.info(stub!.ID, { index: first.meta.index!, waitMs: 10_000 });
    setTimeout(() => void client.jobs.deregister("blk", { purge: true }), 100);
    const changed = await woke;
    expect(Date.now() - t1).toBeLessThan(5_000);
    expect(changed.meta.index).toBeGreaterThan(first.meta.index!);
    expect(changed.data.DesiredStatus).toBe("stop");
    await double.waitFor(() => double.liveTasks() === 0);
  });

  it("dispatch enforces meta and payload rules; a repeated idempotency token returns the same child", async () => {
    const { double, client } = await setup();
    await client.jobs.register({
      ...shJob("param", "exit 0"),
      ParameterizedJob: { Payload: "forbidden", MetaRequired: ["need"], MetaOptional: ["may"] },
    });
    expect((await httpError(client.jobs.dispatch("param", { meta: { need: "1", nope: "x" } }))).body).toBe(
      "Dispatch request included unpermitted metadata keys: [nope]",
    );
    expect((await httpError(client.jobs.dispatch("param", { meta: { may: "1" } }))).body).toBe(
      "Dispatch did not provide required meta keys: [need]",
    );
    expect((await httpError(client.jobs.dispatch("param", { meta: { need: "1" }, payload: "x" }))).body).toBe(
      "Payload provided but forbidden by parameterized job",
    );
    expect((await httpError(client.jobs.dispatch("missing", {}))).body).toBe("parameterized job not found");
    const a = await client.jobs.dispatch("param", {
      meta: { need: "1" },
      idempotencyToken: "tok",
      idPrefixTemplate: "t7",
    });
    const b = await client.jobs.dispatch("param", { meta: { need: "1" }, idempotencyToken: "tok" });
    expect(a.data.DispatchedJobID).toMatch(/^param\/dispatch-t7-\d+-[0-9a-f]{8}$/);
    expect(b.data.DispatchedJobID).toBe(a.data.DispatchedJobID);
    const child = (await client.jobs.info(a.data.DispatchedJobID)).data;
    expect(child).toMatchObject({ ParentID: "param", Dispatched: true, Meta: { need: "1" } });
    await double.waitFor(() => double.jobs().find((j) => j.ID === a.data.DispatchedJobID)?.Status === "dead");
    await client.jobs.deregister(a.data.DispatchedJobID, { purge: true });
    await client.jobs.deregister("param", { purge: true });
    expect(double.jobs()).toEqual([]);
  });

  it("deregister stops (Stop=true, dead) or purges (gone); a missing job deregisters fine", async () => {
    const { double, client } = await setup();
    await client.jobs.register(shJob("d", "sleep 30"));
    await double.waitFor(() => double.liveTasks() === 1);
    await client.jobs.deregister("d");
    await double.waitFor(() => double.liveTasks() === 0);
    expect((await client.jobs.info("d")).data).toMatchObject({ Stop: true, Status: "dead" });
    await client.jobs.deregister("d", { purge: true });
    expect((await httpError(client.jobs.info("d"))).isNotFound).toBe(true);
    expect((await client.jobs.deregister("never-was", { purge: true })).data.EvalID).toBe("");
  });

  it("list filters by prefix, includes Meta on request, and understands simple filters", async () => {
    const { client } = await setup({ placementDelayMs: 10_000 });
    for (const [id, run] of [
      ["flakegym-a", "r1"],
      ["flakegym-b", "r2"],
      ["other", "r1"],
    ] as const) {
      await client.jobs.register({ ...shJob(id, "true"), Meta: { flakegym_run: run } });
    }
    expect((await client.jobs.list({ prefix: "flakegym-" })).data.map((j) => j.ID)).toEqual([
      "flakegym-a",
      "flakegym-b",
    ]);
    expect((await client.jobs.list({ prefix: "flakegym-a" })).data[0]!.Meta).toEqual({});
    expect((await client.jobs.list({ prefix: "flakegym-a", meta: true })).data[0]!.Meta).toEqual({
      flakegym_run: "r1",
    });
    expect((await client.jobs.list({ filter: 'Meta.flakegym_run == "r1"' })).data.map((j) => j.ID)).toEqual([
      "flakegym-a",
      "other",
    ]);
    expect((await httpError(client.jobs.list({ filter: "Meta.x ~= 1" }))).status).toBe(400);
    for (const id of ["flakegym-a", "flakegym-b", "other"]) await client.jobs.deregister(id, { purge: true });
  });

  it("MaxRunDuration stops a batch allocation that runs too long", async () => {
    const { double, client } = await setup();
    await client.jobs.register(shJob("slow", "sleep 30", { MaxRunDuration: 300_000_000 }));
    await double.waitFor(
      () => double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "complete"),
      5_000,
    );
    const [stub] = (await client.jobs.allocations("slow")).data;
    expect(stub!.ClientDescription).toBe("allocation exceeded max_run_duration");
    expect(stub!.TaskStates.t!.Events.map((e) => e.Type)).toContain("Killing");
    await client.jobs.deregister("slow", { purge: true });
  });

  it("signals a running task's process and serves its files with fs/cat (binary-safe); unknown tasks are refused", async () => {
    const { double, client } = await setup();
    // on SIGUSR2 the task writes a file into the shared alloc dir, then keeps running
    await client.jobs.register(
      shJob(
        "sig",
        'trap \'printf "got\\000\\377" > "$NOMAD_ALLOC_DIR/out.bin"\' USR2; echo ready; while :; do sleep 0.1; done',
      ),
    );
    await double.waitFor(() =>
      double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "running"),
    );
    const [stub] = (await client.jobs.allocations("sig")).data;
    await double.waitFor(() => double.liveTasks() === 1);
    // the shell installs its trap before printing "ready"
    for (let i = 0; i < 100; i++) {
      if ((await client.logs.read(stub!.ID, { task: "t", type: "stdout" })).data.includes("ready")) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const missing = await httpError(client.fs.cat(stub!.ID, "alloc/out.bin"));
    expect(missing.status).toBe(400);
    await client.allocations.signal(stub!.ID, { signal: "SIGUSR2", task: "t" });
    let got: Buffer | undefined;
    for (let i = 0; i < 100 && !got; i++) {
      got = await client.fs
        .cat(stub!.ID, "alloc/out.bin")
        .then((r) => r.data)
        .catch(() => undefined);
      if (!got) await new Promise((r) => setTimeout(r, 50));
    }
    expect(got).toEqual(Buffer.from([103, 111, 116, 0, 255]));
    expect(
      (await httpError(client.allocations.signal(stub!.ID, { signal: "SIGUSR2", task: "nope" }))).status,
    ).toBe(400);
    expect((await httpError(client.allocations.signal(stub!.ID, { signal: "USR2", task: "t" }))).status).toBe(
      400,
    );
    await client.jobs.deregister("sig", { purge: true });
    await double.waitFor(() => double.liveTasks() === 0);
  });

  it("ACLs: each endpoint needs its capability; status needs none; an unknown token is 'ACL token not found'", async () => {
    const { double } = await setup({
      token: "t0k",
      aclTokens: {
        documented: { namespaces: { default: DOCUMENTED_CAPABILITIES } },
        reader: { namespaces: { default: ["list-jobs", "read-job"] }, agent: "read" },
      },
    });
    const as = (token?: string) =>
      createNomadClient({ address: double.url, retry: { attempts: 1 }, ...(token ? { token } : {}) });
    const anon = as();
    const documented = as("documented");
    const reader = as("reader");
    const root = as("t0k");
    try {
      // /v1/status/leader checks no ACL (command/agent/status_endpoint.go)
      expect((await anon.status.leader()).data).toBe("127.0.0.1:4647");
      expect((await httpError(anon.jobs.list())).body).toContain("Permission denied");
      const stranger = as("nope");
      expect((await httpError(stranger.jobs.list())).body).toContain("ACL token not found");
      stranger.close();
      // the documented token: jobs yes, agent:read no
      expect((await documented.jobs.list()).data).toEqual([]);
      const agent = await httpError(documented.agent.self());
      expect([agent.status, agent.body]).toEqual([403, expect.stringContaining("Permission denied")]);
      // a reader may read the agent and list, not submit
      expect((await reader.agent.self()).data).toBeDefined();
      const submit = await httpError(reader.jobs.register(shJob("nope", "true") as never));
      expect(submit.status).toBe(403);
      await documented.jobs.register(shJob("ok", "true") as never);
      await root.jobs.deregister("ok", { purge: true });
    } finally {
      for (const c of [anon, documented, reader, root]) c.close();
    }
  });

  it("raw_exec tasks start with the client's environment minus env.denylist; container tasks without it", async () => {
    const { double, client } = await setup({
      clientEnv: { PATH: process.env.PATH, OPENAI_API_KEY: "sk-canary-1", VAULT_TOKEN: "hvs.denied" },
    });
    const script = 'echo "key=$OPENAI_API_KEY vault=$VAULT_TOKEN"';
    await client.jobs.register(shJob("inherit", script));
    const docker = shJob("image", script);
    docker.TaskGroups[0]!.Tasks[0]!.Driver = "docker";
    docker.TaskGroups[0]!.Tasks[0]!.Config = { image: "img", entrypoint: ["/bin/sh"], args: ["-c", script] };
    await client.jobs.register(docker);
    const done = (id: string) =>
      double
        .allocations()
        .some((a) => a.JobID === id && (a as { ClientStatus: string }).ClientStatus === "complete");
    await double.waitFor(() => done("inherit") && done("image"));
    const out = async (id: string) => {
      const [stub] = (await client.jobs.allocations(id)).data;
      return (await client.logs.read(stub!.ID, { task: "t", type: "stdout" })).data;
    };
    // Nomad's default denylist keeps VAULT_TOKEN out, and nothing keeps a model API key out.
    expect(await out("inherit")).toBe("key=sk-canary-1 vault=\n");
    expect(await out("image")).toBe("key= vault=\n");
    await client.jobs.deregister("inherit", { purge: true });
    await client.jobs.deregister("image", { purge: true });
  });

  it("a container task needs its network_mode to exist; storage_opt needs a quota-capable storage driver", async () => {
    const { double, client } = await setup({ networks: ["team-egress"], storageQuota: false });
    const container = (id: string, driver: string, config: Record<string, unknown>) => {
      const j = shJob(id, "true");
      j.TaskGroups[0]!.Tasks[0]!.Driver = driver;
      j.TaskGroups[0]!.Tasks[0]!.Config = {
        image: "img",
        entrypoint: ["/bin/sh"],
        args: ["-c", "true"],
        ...config,
      };
      return j;
    };
    await client.jobs.register(container("known", "docker", { network_mode: "team-egress" }));
    await client.jobs.register(container("unknown", "docker", { network_mode: "flakegym-egress" }));
    await client.jobs.register(container("podman-unknown", "podman", { network_mode: "nope" }));
    await client.jobs.register(
      container("quota", "docker", { network_mode: "team-egress", storage_opt: { size: "1M" } }),
    );
    const status = (id: string) =>
      (double.allocations().find((a) => a.JobID === id) as { ClientStatus?: string } | undefined)
        ?.ClientStatus;
    const ids = ["known", "unknown", "podman-unknown", "quota"];
    await double.waitFor(() => ids.every((id) => status(id) === "complete" || status(id) === "failed"));
    const driverError = async (id: string) => {
      const [stub] = (await client.jobs.allocations(id)).data;
      const events = (await client.allocations.info(stub!.ID)).data.TaskStates.t!.Events;
      return events.find((e) => e.Type === "Driver Failure")?.DisplayMessage;
    };
    expect(status("known")).toBe("complete");
    expect(await driverError("unknown")).toBe(
      "failed to create container: API error (404): network flakegym-egress not found",
    );
    expect(await driverError("podman-unknown")).toContain("unable to find network with name or ID nope");
    expect(await driverError("quota")).toContain(
      "--storage-opt is supported only for overlay over xfs with 'pquota'",
    );
    for (const id of ids) await client.jobs.deregister(id, { purge: true });
  });

  it("keeps only the last 10 events of a task", async () => {
    const { double, client } = await setup();
    await client.jobs.register(shJob("chatty", "sleep 30"));
    await double.waitFor(() =>
      double.allocations().some((a) => (a as { ClientStatus: string }).ClientStatus === "running"),
    );
    const [stub] = (await client.jobs.allocations("chatty")).data;
    for (let i = 0; i < 12; i++) double.addTaskEvent(stub!.ID, "t", `Custom${i}`, `event ${i}`);
    const events = (await client.allocations.info(stub!.ID)).data.TaskStates.t!.Events;
    expect(events).toHaveLength(10);
    expect(events.at(-1)!.Type).toBe("Custom11");
    expect(events[0]!.Type).toBe("Custom2");
    await client.jobs.deregister("chatty", { purge: true });
  });

  it("replaces a lost allocation (reschedule Attempts 0 or not) unless disconnect.replace is false", async () => {
    const { double, client } = await setup();
    const once = { ReschedulePolicy: { Attempts: 0, Unlimited: false } };
    await client.jobs.register(shJob("replaced", "sleep 30", once));
    await client.jobs.register(shJob("kept-lost", "sleep 30", { ...once, Disconnect: { Replace: false } }));
    const of = (id: string) => double.allocations().filter((a) => a.JobID === id);
    const running = (id: string) =>
      of(id).filter((a) => (a as { ClientStatus: string }).ClientStatus === "running");
    await double.waitFor(() => running("replaced").length === 1 && running("kept-lost").length === 1);
    await double.loseAllocation(running("replaced")[0]!.ID);
    await double.loseAllocation(running("kept-lost")[0]!.ID);
    await double.waitFor(() => of("replaced").length === 2 && running("replaced").length === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(of("kept-lost").map((a) => (a as { ClientStatus: string }).ClientStatus)).toEqual(["lost"]);
    await client.jobs.deregister("replaced", { purge: true });
    await client.jobs.deregister("kept-lost", { purge: true });
  });

  it("with no ready node nothing is evaluated; the blocked evaluation places once a node is ready", async () => {
    const { double, client } = await setup({ nodeReady: false });
    await client.jobs.register(shJob("waits", "true"));
    let failed: Record<string, { NodesEvaluated?: number }> | undefined;
    for (let i = 0; i < 50 && !failed; i++) {
      const evals = (await client.jobs.evaluations("waits")).data;
      failed = evals.find((e) => Object.keys(e.FailedTGAllocs ?? {}).length > 0)
        ?.FailedTGAllocs as typeof failed;
      if (!failed) await new Promise((r) => setTimeout(r, 20));
    }
    expect(failed?.g?.NodesEvaluated).toBe(0);
    expect((await client.jobs.allocations("waits")).data).toEqual([]);
    double.setNodeReady(true);
    await double.waitFor(() =>
      double
        .allocations()
        .some((a) => a.JobID === "waits" && (a as { ClientStatus: string }).ClientStatus === "complete"),
    );
    await client.jobs.deregister("waits", { purge: true });
  });

  it("OOM-kills a task above MemoryMB; MemoryMaxMB counts only with memory oversubscription", async () => {
    const hog = `exec ${JSON.stringify(process.execPath)} -e "globalThis.b = Buffer.alloc(200 * 1024 * 1024, 1); setTimeout(() => {}, 1500)"`;
    const withMemory = (id: string, r: { MemoryMB: number; MemoryMaxMB?: number }) => {
      const j = shJob(id, hog);
      j.TaskGroups[0]!.Tasks[0]!.Resources = r;
      return j;
    };
    const final = async (c: NomadClient, d: NomadDouble, id: string) => {
      await d.waitFor(() =>
        d
          .allocations()
          .some(
            (a) =>
              a.JobID === id && ["complete", "failed"].includes((a as { ClientStatus: string }).ClientStatus),
          ),
      );
      const [stub] = (await c.jobs.allocations(id)).data;
      return (await c.allocations.info(stub!.ID)).data;
    };
    {
      const { double, client } = await setup();
      await client.jobs.register(withMemory("hog", { MemoryMB: 100, MemoryMaxMB: 1024 }));
      const a = await final(client, double, "hog");
      expect(a.ClientStatus).toBe("failed");
      const term = a.TaskStates.t!.Events.find((e) => e.Type === "Terminated")!;
      expect(term.Details.oom_killed).toBe("true");
      expect(term.ExitCode).toBe(137);
      await client.jobs.deregister("hog", { purge: true });
      client.close();
      await double.close();
    }
    {
      const { double, client } = await setup({ memoryOversubscription: true });
      await client.jobs.register(withMemory("hog2", { MemoryMB: 100, MemoryMaxMB: 1024 }));
      const a = await final(client, double, "hog2");
      expect(a.ClientStatus).toBe("complete");
      await client.jobs.deregister("hog2", { purge: true });
    }
  });
});
