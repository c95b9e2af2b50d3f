import { describe, expect, it } from "vitest";
import { minutes } from "../../src/duration.js";
import { canonicalizeJob } from "../../src/spec/canonicalize.js";
import { parseJob } from "../../src/spec/job.js";
import {
  buildWorkerJob,
  GRPC_PORT_LABEL,
  META,
  nomadVar,
  renderJobJson,
  WORKER_ENV,
  type WorkerJobInput,
} from "../../src/spec/worker-job.js";
import { expectGolden } from "../helpers/golden.js";

const DIGEST = `sha256:${"ab12".repeat(16)}`;

const base: WorkerJobInput = {
  jobId: "flakegym-run1-demo-agent-0f0f0f0f",
  runId: "run1",
  taskId: "demo",
  profile: "python",
  driver: { driver: "docker", image: `oci.example/flakegym/python-env@${DIGEST}` },
  policyBaseUrl: "http://10.0.0.5:8089/v1",
  expiresAtMs: 1_800_000_000_000,
  maxRunMs: 1_800_000,
};

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
      readonly_rootfs: true,
      privileged: false,
      pids_limit: 1024,
      runtime: "runsc",
      ports: [GRPC_PORT_LABEL],
    });
    expect(job.TaskGroups[0]!.Networks).toEqual([
      { Mode: "host", DynamicPorts: [{ Label: GRPC_PORT_LABEL, To: 26040 }] },
    ]);
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
      MetaRequired: [META.trajectory, META.expires],
      MetaOptional: [META.attempt],
    });
    expect(job.Meta).toMatchObject({ [META.run]: "run1", [META.task]: "demo", [META.kind]: "agent" });
  });

  it("env carries the policy URL and the listen address, never secrets", () => {
    const env = buildWorkerJob({ ...base, env: { LANG: "C.UTF-8" } }).TaskGroups[0]!.Tasks[0]!.Env!;
    expect(env[WORKER_ENV.policyBaseUrl]).toBe("http://10.0.0.5:8089/v1");
    expect(env.PROTOBUS_ADDRESS).toBe(`0.0.0.0:${nomadVar("NOMAD_PORT_grpc")}`);
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

  it("podman: same sandbox in podman's keys", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "podman", image: `docker://oci.example/x@${DIGEST}` },
    });
    expectGolden("worker-podman", { Job: job });
    expect(job.TaskGroups[0]!.Tasks[0]!.Config).toMatchObject({ tmpfs: ["/tmp"], readonly_rootfs: true });
  });

  it("nix: a flake output, settings mirrored into Meta (the nix driver passes only NOMAD_* env)", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "nix", flake: "github:example/flakegym#worker-python", command: "flakegym-worker" },
    });
    expectGolden("worker-nix", { Job: job });
    const task = job.TaskGroups[0]!.Tasks[0]!;
    expect(task.Meta?.flakegym_policy_base_url).toBe("http://10.0.0.5:8089/v1");
    expect(job.TaskGroups[0]!.Networks![0]!.DynamicPorts).toEqual([{ Label: GRPC_PORT_LABEL }]);
  });

  it("raw_exec: command and args as given, no port mapping", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "raw_exec", command: "/usr/bin/node", args: ["w.js"] },
    });
    expectGolden("worker-raw-exec", { Job: job });
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
