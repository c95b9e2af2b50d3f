import { describe, expect, it } from "vitest";
import { buildExecJob } from "../../src/spec/exec-job.js";
import type { Job } from "../../src/spec/job.js";
import { workerJobFactProblems } from "../../src/spec/job-facts.js";
import { buildWorkerJob, type WorkerJobInput } from "../../src/spec/worker-job.js";
import { BASE_WORKER, DIGEST } from "../helpers/worker-input.js";

const base = BASE_WORKER;

/** A deep copy with one change: the check must notice each fact a builder could lose. */
function mutate(job: Job, change: (j: Job) => void): Job {
  const copy = structuredClone(job);
  change(copy);
  return copy;
}
const config = (j: Job) => j.TaskGroups[0]!.Tasks[0]!.Config as Record<string, unknown>;

describe("workerJobFactProblems", () => {
  it("the built jobs hold every fact (docker, podman, nix; worker and exec)", () => {
    const drivers: WorkerJobInput["driver"][] = [
      base.driver,
      { driver: "podman", image: `docker://oci.example/x@${DIGEST}` },
      { driver: "nix", flake: "github:example/flakegym#flakegym-worker", command: "flakegym-worker" },
    ];
    for (const driver of drivers) {
      expect(workerJobFactProblems(buildWorkerJob({ ...base, driver })), driver.driver).toEqual([]);
      const exec = buildExecJob({
        jobId: "flakegym-run1-demo-exec-1",
        runId: "run1",
        taskId: "demo",
        trajectoryId: "t1",
        profile: "python",
        driver,
        command: "true",
        expiresAtMs: 1_800_000_000_000,
      });
      expect(workerJobFactProblems(exec), `exec ${driver.driver}`).toEqual([]);
    }
  });

  it("podman: a task option its driver does not have (docker's security_opt) is named: Nomad refuses the job", () => {
    const podman = buildWorkerJob({
      ...base,
      driver: { driver: "podman", image: `docker://oci.example/x@${DIGEST}` },
    });
    const bad = mutate(podman, (j) => {
      config(j)["security_opt"] = ["no-new-privileges"];
    });
    expect(workerJobFactProblems(bad)).toEqual([
      "TaskGroups[0].Tasks[0].Config.security_opt: the podman driver has no such task option; Nomad refuses the job",
    ]);
  });

  it("docker: the writable layer capped at the job's disk, on a dedicated network", () => {
    const job = buildWorkerJob({ ...base, resources: { diskMb: 2048 } });
    expect(config(job)).toMatchObject({ network_mode: "flakegym-egress", storage_opt: { size: "2048M" } });
    const uncapped = mutate(job, (j) => delete config(j).storage_opt);
    expect(workerJobFactProblems(uncapped)).toEqual([
      expect.stringContaining('TaskGroups[0].Tasks[0].Config.storage_opt.size is undefined, not "2048M"'),
    ]);
    const open = mutate(job, (j) => {
      config(j).network_mode = "bridge";
    });
    expect(workerJobFactProblems(open)).toEqual([
      expect.stringContaining("Config.network_mode: network_mode 'bridge'"),
    ]);
  });

  it("a container with a host path (volumes, a bind mount) is named: it reaches other trajectories' files", () => {
    const job = buildWorkerJob(base);
    const bound = mutate(job, (j) => {
      config(j).volumes = ["/srv/catalog:/catalog"];
      (config(j).mount as unknown[]).push({ type: "bind", source: "/srv", target: "/srv" });
    });
    expect(workerJobFactProblems(bound)).toEqual([
      expect.stringContaining("Config.volumes mounts host paths"),
      expect.stringContaining("a bind mount at /srv reaches the host's files"),
    ]);
  });

  it("memory: MemoryMB is the hard limit unless the cluster oversubscribes", () => {
    const job = mutate(buildWorkerJob(base), (j) => {
      j.TaskGroups[0]!.Tasks[0]!.Resources = { CPU: 1000, MemoryMB: 256, MemoryMaxMB: 2048 };
    });
    expect(workerJobFactProblems(job)).toEqual([expect.stringContaining("hard memory limit is 256 MB")]);
    expect(workerJobFactProblems(job, { memoryOversubscription: true })).toEqual([]);
  });

  it("a lost allocation replaced, a reschedule policy, an inherited env, a secret: each named", () => {
    const job = buildWorkerJob(base);
    const problems = workerJobFactProblems(
      mutate(job, (j) => {
        const g = j.TaskGroups[0]!;
        g.Disconnect = { Replace: true };
        g.ReschedulePolicy = { Attempts: 1, Unlimited: false, Interval: 0, Delay: 0 };
        g.Tasks[0]!.Env = { ...g.Tasks[0]!.Env, OPENAI_API_KEY: "sk-1" };
      }),
    );
    expect(problems).toEqual([
      expect.stringContaining("Disconnect.Replace must be false"),
      expect.stringContaining("ReschedulePolicy must be Attempts 0"),
      expect.stringContaining("'OPENAI_API_KEY' looks like a secret"),
    ]);
    const nix = buildWorkerJob({
      ...base,
      driver: { driver: "nix", flake: "github:example/flakegym#w", command: "flakegym-worker" },
    });
    const inherited = mutate(nix, (j) => {
      config(j).args = ["-c", 'exec "$@"', "x"];
    });
    expect(workerJobFactProblems(inherited)).toEqual([
      expect.stringContaining("inherits the Nomad client's environment"),
    ]);
  });

  it("raw_exec is reported: it isolates nothing", () => {
    const job = buildWorkerJob({
      ...base,
      driver: { driver: "raw_exec", command: "/bin/worker", allowUnisolated: true },
    });
    expect(workerJobFactProblems(job)).toEqual([expect.stringContaining("raw_exec isolates nothing")]);
  });
});
