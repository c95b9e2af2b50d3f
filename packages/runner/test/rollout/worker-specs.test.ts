import { describe, expect, it } from "vitest";
import type { TaskRuntime } from "../../src/rollout/wire-tasks.js";
import { AGENT_WORKER_SLACK_MS, scoringWorkerWallClockMs } from "../../src/rollout/worker-deadlines.js";
import type { WorkerSpecBase } from "../../src/rollout/worker-specs.js";
import {
  agentWorkerSpec,
  imageSpecOf,
  scoringWorkerSpec,
  workerLimitsOf,
} from "../../src/rollout/worker-specs.js";
import type { RecordedImage } from "../../src/run-format/schema.js";

const task: TaskRuntime = {
  id: "t",
  profile: "python",
  limits: { memoryMb: 2048, pids: 256, cpuSeconds: 600, diskMb: 1024 },
};
const image: RecordedImage = {
  name: "flakegym/python-env",
  tag: "abc",
  kind: "snapshot",
  digest: "sha256:1",
  storePath: "/nix/store/x-python-env",
  ref: "localhost/flakegym/python-env:abc",
};
const base = (over: Partial<WorkerSpecBase> = {}): WorkerSpecBase => ({
  runId: "RUN",
  taskId: "t",
  task,
  image: "host /usr",
  fork: { workspace: "forks/a/workspace", deps: "forks/a/deps" },
  ...over,
});
const limits = { maxTurns: 30, timeoutMs: 600_000, testTimeoutMs: 120_000 };

describe("worker specs", () => {
  it("carry a catalog task's workdir as the workspace alias and its mounts under the task folder", async () => {
    const { TaskSpec } = await import("../../src/tasks/task-spec.js");
    const spec = TaskSpec.parse({
      id: "t",
      summary: "s",
      prompt: "p",
      profile: "dev-base",
      source: { kind: "local", dir: "repo", commit: "0".repeat(40) },
      tests: { dir: "hidden", run: { kind: "eval_cmd", command: "true" } },
      solution: "solution.patch",
      workdir: "/app",
      mounts: [{ dir: "container/skills", at: "/skills" }],
    });
    const t: TaskRuntime = {
      ...task,
      catalog: { spec, dir: "/cat/t", paths: { solution: "/cat/t/solution.patch" } },
    };
    const s = scoringWorkerSpec(base({ task: t }), "t-0", { limits, testRepeat: 1 }, undefined);
    expect(s.workspaceAlias).toBe("/app");
    expect(s.containerMounts).toEqual([{ hostPath: "/cat/t/container/skills", path: "/skills" }]);
    expect(agentWorkerSpec(base({ task: t }), "t-0", limits, { socketPath: "g.sock" }).workspaceAlias).toBe(
      "/app",
    );
    expect(() => TaskSpec.shape.workdir.parse("/usr/app")).toThrow(/sandbox's own \/usr/);
    expect(() => TaskSpec.shape.workdir.parse("/app/../etc")).toThrow(/plain segments/);
  });

  it("carry the task's limits with the worker's wall clock", () => {
    expect(workerLimitsOf(task, 5)).toEqual({ ...task.limits, wallClockMs: 5 });
  });

  it("name an image only when the workers run on a recorded one", () => {
    expect(imageSpecOf("host /usr")).toEqual({});
    expect(imageSpecOf(image)).toEqual({ image: image.ref });
  });

  it("an agent's: on its fork, reaching the gateway's socket, its policy at the route's URL", () => {
    const spec = agentWorkerSpec(base({ image }), "t-0", limits, {
      socketPath: "scratch/gateway.sock",
      url: "http://gateway/t/t-0/v1",
    });
    expect(spec).toEqual({
      runId: "RUN",
      taskId: "t",
      trajectoryId: "t-0",
      profile: "python",
      workspace: "forks/a/workspace",
      depsDir: "forks/a/deps",
      gateway: { socketPath: "scratch/gateway.sock", url: "http://gateway/t/t-0/v1" },
      limits: { ...task.limits, wallClockMs: 600_000 + AGENT_WORKER_SLACK_MS },
      agent: true,
      image: image.ref,
    });
  });

  it("the warm pool's shape: an agent's without a URL (the route comes later)", () => {
    const spec = agentWorkerSpec(base(), "warm", limits, { socketPath: "scratch/gateway.sock" });
    expect(spec.gateway).toEqual({ socketPath: "scratch/gateway.sock" });
    expect(spec.trajectoryId).toBe("warm");
    expect(spec).not.toHaveProperty("image");
  });

  it("a scorer's: exec only, no gateway, outliving every hidden-test run, the files bound read-only", () => {
    const files = [{ hostPath: "scratch/ro/test_a.py", path: "tests/test_a.py" }];
    const spec = scoringWorkerSpec(base(), "t-0", { limits, testRepeat: 3 }, files);
    expect(spec).toEqual({
      runId: "RUN",
      taskId: "t",
      trajectoryId: "t-0-score",
      profile: "python",
      workspace: "forks/a/workspace",
      depsDir: "forks/a/deps",
      gateway: {},
      limits: { ...task.limits, wallClockMs: scoringWorkerWallClockMs(120_000, 3) },
      agent: false,
      readOnlyFiles: files,
    });
    expect(scoringWorkerSpec(base(), "t-0", { limits, testRepeat: 1 }, undefined)).not.toHaveProperty(
      "readOnlyFiles",
    );
  });
});
