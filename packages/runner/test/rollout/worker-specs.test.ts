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
