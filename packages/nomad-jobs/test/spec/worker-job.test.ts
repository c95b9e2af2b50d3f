import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { minutes } from "../../src/duration.js";
import { canonicalizeJob } from "../../src/spec/canonicalize.js";
import { parseJob } from "../../src/spec/job.js";
import { RAW_EXEC_MISSING_ISOLATION } from "../../src/spec/worker-driver.js";
import { CLEAR_ENV, nomadVar, WORKER_ENV, WORKSPACE_PREP } from "../../src/spec/worker-env.js";
import { buildWorkerJob, renderJobJson, type WorkerJobInput } from "../../src/spec/worker-job.js";
import { GRPC_PORT_LABEL, HOST_PORT_LABEL, META } from "../../src/spec/worker-names.js";
import { CLINE_CORE_MEMORY_MB } from "../../src/spec/worker-resources.js";
import { expectGolden } from "../helpers/golden.js";
import { BASE_WORKER, DIGEST } from "../helpers/worker-input.js";

const base = BASE_WORKER;

describe("buildWorkerJob", () => {
  it("docker: digest-pinned image, sandbox keys, dynamic grpc port mapped to the core's port", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { ...base.driver, runtime: "runsc" } as WorkerJobInput["driver"],
    });
    expectGolden("worker-docker", { Job: job });
    const task = job.TaskGroups[0]!.Tasks[0]!;
    expect(task.Config).toMatchObject({
      cap_drop: ["ALL"],
      readonly_rootfs: false,
      privileged: false,
      pids_limit: 1024,
      runtime: "runsc",
      ports: [GRPC_PORT_LABEL],
    });
    expect(job.TaskGroups[0]!.Networks).toEqual([
      { Mode: "host", DynamicPorts: [{ Label: GRPC_PORT_LABEL, To: 26040 }, { Label: HOST_PORT_LABEL }] },
    ]);
    // The image entrypoint's contract: core and host ports, workspace, config, home.
    expect(task.Env).toMatchObject({
      FLAKEGYM_CORE_PORT: nomadVar("NOMAD_PORT_grpc"),
      FLAKEGYM_HOST_PORT: nomadVar("NOMAD_PORT_hostbridge"),
      FLAKEGYM_WORKSPACE: "/workspace",
      FLAKEGYM_CONFIG_DIR: `${nomadVar("NOMAD_ALLOC_DIR")}/cline`,
      FLAKEGYM_HOME: `${nomadVar("NOMAD_TASK_DIR")}/home`,
    });
    // No command: the image's entrypoint (flakegym-worker) starts the agent.
    expect(task.Config.command).toBeUndefined();
    expect(task.Config.entrypoint).toBeUndefined();
  });

  it("is one-shot: no restarts, no reschedules, a max run duration", () => {
    const g = buildWorkerJob(base).TaskGroups[0]!;
    expect(g.RestartPolicy).toMatchObject({ Attempts: 0, Mode: "fail" });
    expect(g.ReschedulePolicy).toMatchObject({ Attempts: 0, Unlimited: false });
    expect(g.MaxRunDuration).toBe(minutes(30));
    // Canonicalizing keeps the zeros (a default never overrides a set value).
    const c = canonicalizeJob(buildWorkerJob(base)).TaskGroups[0]!;
    expect(c.RestartPolicy?.Attempts).toBe(0);
    expect(c.ReschedulePolicy).toMatchObject({ Attempts: 0, Unlimited: false });
  });

  it("is a parameterized batch job whose dispatches must name the trajectory", () => {
    const job = buildWorkerJob(base);
    expect(job.Type).toBe("batch");
    expect(job.ParameterizedJob).toEqual({
      Payload: "forbidden",
      MetaRequired: [META.trajectory, META.expires, META.policyUrl, META.coreToken],
      MetaOptional: [META.attempt],
    });
    expect(job.Meta).toMatchObject({ [META.run]: "run1", [META.task]: "demo", [META.kind]: "agent" });
  });

  it("env carries the policy URL and the listen address, never secrets", () => {
    const env = buildWorkerJob({ ...base, env: { LANG: "C.UTF-8" } }).TaskGroups[0]!.Tasks[0]!.Env!;
    // the route is per trajectory: each dispatch carries it, so one parent serves them all
    expect(env[WORKER_ENV.policyBaseUrl]).toBe(nomadVar(`NOMAD_META_${META.policyUrl}`));
    expect(env.LANG).toBe("C.UTF-8");
    expect(() => buildWorkerJob({ ...base, env: { OPENAI_API_KEY: "sk-123" } })).toThrow(
      "'OPENAI_API_KEY' looks like a secret",
    );
    expect(() => buildWorkerJob({ ...base, env: { NOMAD_TOKEN: "x" } })).toThrow("looks like a secret");
  });

  it("rejects a loopback policy URL, naming the fix", () => {
    for (const url of [
      "http://127.0.0.1:8089/v1",
      "http://localhost:1/v1",
      "http://[::1]:9/v1",
      "http://0.0.0.0:1",
    ]) {
      expect(() => buildWorkerJob({ ...base, policyBaseUrl: url })).toThrow("--gateway-advertise");
    }
  });

  it("rejects an image not pinned by digest unless allowMutableTag", () => {
    const tagged = { driver: "docker" as const, image: "flakegym/python-env:latest" };
    expect(() => buildWorkerJob({ ...base, driver: tagged })).toThrow("not pinned by digest");
    expect(buildWorkerJob({ ...base, driver: { ...tagged, allowMutableTag: true } }).ID).toBe(base.jobId);
  });

  it("containers join a dedicated network (default flakegym-egress); open or shared modes are refused", () => {
    expect(buildWorkerJob(base).TaskGroups[0]!.Tasks[0]!.Config.network_mode).toBe("flakegym-egress");
    const named = { ...base.driver, networkMode: "team-egress" } as WorkerJobInput["driver"];
    expect(buildWorkerJob({ ...base, driver: named }).TaskGroups[0]!.Tasks[0]!.Config.network_mode).toBe(
      "team-egress",
    );
    for (const networkMode of ["host", "bridge", "none", "container:other"]) {
      const driver = { ...base.driver, networkMode } as WorkerJobInput["driver"];
      expect(() => buildWorkerJob({ ...base, driver }), networkMode).toThrow("--network-mode");
    }
  });

  it("docker: the writable layer is capped at the job's disk unless the operator turns it off", () => {
    const cfg = (j: ReturnType<typeof buildWorkerJob>) => j.TaskGroups[0]!.Tasks[0]!.Config;
    expect(cfg(buildWorkerJob({ ...base, resources: { diskMb: 8192 } })).storage_opt).toEqual({
      size: "8192M",
    });
    expect(
      cfg(buildWorkerJob({ ...base, sandbox: { writableLayerQuota: false } })).storage_opt,
    ).toBeUndefined();
  });

  it("podman: same sandbox in podman's keys", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "podman", image: `docker://oci.example/x@${DIGEST}` },
    });
    expectGolden("worker-podman", { Job: job });
    expect(job.TaskGroups[0]!.Tasks[0]!.Config).toMatchObject({
      tmpfs: ["/tmp"],
      cap_drop: ["ALL"],
      ports: ["grpc"],
    });
  });

  it("nix: a flake output; run under `env -i` with the allowlisted settings only (a chroot driver gets the client's env)", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "nix", flake: "github:example/flakegym#flakegym-worker", command: "flakegym-worker" },
    });
    expectGolden("worker-nix", { Job: job });
    const cfg = job.TaskGroups[0]!.Tasks[0]!.Config as {
      command: string;
      args: string[];
      packages: string[];
    };
    expect(cfg.command).toBe("sh");
    expect(cfg.args.slice(0, 3)).toEqual(["-c", CLEAR_ENV, "flakegym-env"]);
    expect(cfg.packages).toEqual(["github:example/flakegym#flakegym-worker", "#coreutils", "#bash"]);
    expect(cfg.args).toContain(`FLAKEGYM_CORE_PORT=${nomadVar("NOMAD_PORT_grpc")}`);
    expect(cfg.args).toContain(`FLAKEGYM_WORKSPACE=${nomadVar("NOMAD_ALLOC_DIR")}/workspace`);
    // then sh runs the preparation step, which runs the worker
    expect(cfg.args.slice(-5)).toEqual(["sh", "-c", WORKSPACE_PREP, "flakegym-prep", "flakegym-worker"]);
    expect(job.TaskGroups[0]!.Networks![0]!.DynamicPorts).toEqual([
      { Label: GRPC_PORT_LABEL },
      { Label: HOST_PORT_LABEL },
    ]);
  });

  it("raw_exec: the preparation step, then the command; workspace in the allocation dir", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "raw_exec", command: "/usr/bin/node", args: ["w.js"], allowUnisolated: true },
      snapshotDir: "/srv/snapshots/demo",
    });
    expectGolden("worker-raw-exec", { Job: job });
    const t = job.TaskGroups[0]!.Tasks[0]!;
    const cfg = t.Config as { command: string; args: string[] };
    expect(cfg.command).toBe("/bin/sh");
    // env -i: nothing of the client's environment; only the allowlist, then the preparation step
    expect(cfg.args.slice(0, 3)).toEqual(["-c", CLEAR_ENV, "flakegym-env"]);
    expect(cfg.args).toContain("FLAKEGYM_SNAPSHOT_DIR=/srv/snapshots/demo");
    expect(cfg.args).toContain(`NOMAD_IP_grpc=${nomadVar("NOMAD_IP_grpc")}`);
    expect(cfg.args.slice(-6)).toEqual([
      "/bin/sh",
      "-c",
      WORKSPACE_PREP,
      "flakegym-prep",
      "/usr/bin/node",
      "w.js",
    ]);
    expect(t.Env).toMatchObject({ FLAKEGYM_SNAPSHOT_DIR: "/srv/snapshots/demo" });
  });

  it("raw_exec is refused unless allowUnisolated, naming the isolation it lacks", () => {
    const build = () =>
      buildWorkerJob({ ...base, driver: { driver: "raw_exec", command: "/usr/bin/node", args: ["w.js"] } });
    expect(build).toThrow(/raw_exec driver cannot hold an agent's workload/);
    for (const gap of RAW_EXEC_MISSING_ISOLATION) expect(build).toThrow(gap);
    expect(build).toThrow("allowUnisolated");
  });

  it("the env -i step hands the worker the allowlist and nothing of the client's env (real sh)", () => {
    const job = buildWorkerJob({
      ...base,
      env: { LANGUAGE_HINT: "py" },
      driver: {
        driver: "raw_exec",
        command: "/bin/sh",
        args: ["-c", "env | sort"],
        allowUnisolated: true,
      },
    });
    const root = mkdtempSync(join(tmpdir(), "flakegym-envi-"));
    try {
      // What Nomad does: interpolate ${...} in args, start the task with the client's env.
      const nomad: Record<string, string> = {
        NOMAD_ALLOC_DIR: join(root, "alloc"),
        NOMAD_TASK_DIR: join(root, "local"),
        NOMAD_PORT_grpc: "21000",
        NOMAD_PORT_hostbridge: "21001",
        NOMAD_IP_grpc: "10.0.0.9",
      };
      const args = (job.TaskGroups[0]!.Tasks[0]!.Config.args as string[]).map((a) =>
        a.replace(/\$\{([A-Za-z0-9_]+)\}/g, (w, n: string) => nomad[n] ?? w),
      );
      const out = execFileSync("/bin/sh", args, {
        env: { ...nomad, PATH: process.env.PATH, OPENAI_API_KEY: "sk-canary", AWS_PROFILE: "ops" },
        encoding: "utf8",
      });
      expect(out).not.toContain("sk-canary");
      expect(out).not.toContain("AWS_PROFILE");
      expect(out).toContain("FLAKEGYM_CORE_PORT=21000\n");
      expect(out).toContain("LANGUAGE_HINT=py\n");
      const names = out
        .trim()
        .split("\n")
        .map((l) => l.split("=")[0]!);
      for (const n of names)
        expect(n).toMatch(/^(PATH|PWD|SHLVL|_|LANG|LANGUAGE_HINT|FLAKEGYM_\w+|NOMAD_\w+)$/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("maps sizing to Nomad resources: reservation ≤ hard limit", () => {
    const t = (r: WorkerJobInput["resources"]) =>
      buildWorkerJob({ ...base, resources: r }).TaskGroups[0]!.Tasks[0]!.Resources;
    expect(t({ cpuMhz: 2000, memoryMb: 512, memoryMaxMb: 2048, diskMb: 8000 })).toEqual({
      CPU: 2000,
      MemoryMB: 512,
      MemoryMaxMB: 2048,
    });
    expect(t({ memoryMb: 4096, memoryMaxMb: 1024 })).toEqual({ CPU: 1000, MemoryMB: 1024, MemoryMaxMB: 0 });
    expect(t({ memoryMb: 700, memoryMaxMb: 0 })).toEqual({ CPU: 1000, MemoryMB: 700, MemoryMaxMB: 0 });
    // the default holds the measured core plus 1 GiB, as the hard limit (MemoryMB)
    expect(t({})).toEqual({ CPU: 1000, MemoryMB: CLINE_CORE_MEMORY_MB + 1024, MemoryMaxMB: 0 });
  });

  it("refuses an agent worker whose memory cannot hold the measured core", () => {
    const build = (memoryMb: number, memoryMaxMb = 0) =>
      buildWorkerJob({ ...base, resources: { memoryMb, memoryMaxMb } });
    expect(() => build(512)).toThrow(/512 MB is below 544 MB .*OOM-kill.*unless memory oversubscription/);
    expect(() => build(512, 2048)).not.toThrow();
    expect(() => buildWorkerJob({ ...base, agent: false, resources: { memoryMb: 256 } })).not.toThrow();
  });

  it("replace off on disconnect: a lost worker is never replaced behind the runner's back", () => {
    expect(buildWorkerJob(base).TaskGroups[0]!.Disconnect).toEqual({ Replace: false });
    expect(parseJob(buildWorkerJob(base)).TaskGroups[0]!.Disconnect).toEqual({ Replace: false });
  });

  it("names the bad option", () => {
    expect(() => buildWorkerJob({ ...base, resources: { cpuMhz: -1 } })).toThrow("option 'resources.cpuMhz'");
    expect(() =>
      buildWorkerJob({ ...base, driver: { driver: "nix", flake: "no-output", command: "x" } }),
    ).toThrow("option 'driver.flake'");
  });

  it('renders {"Job": ...} that parses back through the strict schema', () => {
    const text = renderJobJson(buildWorkerJob(base));
    const parsed = JSON.parse(text) as { Job: unknown };
    expect(Object.keys(parsed)).toEqual(["Job"]);
    expect(parseJob(parsed.Job).ID).toBe(base.jobId);
    expect(() => parseJob({ ...(parsed.Job as object), Bogus: 1 })).toThrow("Nomad job spec: field 'Job.");
  });
});
