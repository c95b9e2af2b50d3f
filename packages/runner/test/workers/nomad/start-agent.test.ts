import { META } from "@flakegym/nomad-jobs";
import { describe, expect, it } from "vitest";
import { NomadBackendOptions } from "../../../src/workers/nomad/options.js";
import { dispatchRequestOf } from "../../../src/workers/nomad/start-agent.js";
import { execJobOf } from "../../../src/workers/nomad/worker.js";
import type { WorkerSpec } from "../../../src/workers/types.js";

const spec: WorkerSpec = {
  runId: "run-1",
  taskId: "task-1",
  trajectoryId: "task-1-t0",
  profile: "python",
  workspace: "/forks/t0",
  gateway: { url: "http://10.0.0.5:8089/v1" },
  limits: { memoryMb: 2048, pids: 128, wallClockMs: 600_000 },
  agent: true,
  env: { A: "spec" },
};
const rawExec = NomadBackendOptions.parse({
  driver: { driver: "raw_exec", command: "/bin/sh", allowUnisolated: true },
});

describe("the Nomad backend's pure steps", () => {
  it("an agent's dispatch carries its route, its core token, its expiry and (raw_exec) its fork", () => {
    const r = dispatchRequestOf({ o: rawExec, now: () => 1_000 }, spec, "http://gw/t/x/v1", "tok");
    expect(r.meta).toEqual({
      [META.trajectory]: "task-1-t0",
      [META.expires]: String(1_000 + 600_000 + rawExec.startTimeoutMs + rawExec.graceMs),
      [META.policyUrl]: "http://gw/t/x/v1",
      [META.coreToken]: "tok",
      [META.snapshotDir]: "/forks/t0",
    });
    expect(r.idempotencyToken).toMatch(/^task-1-t0:[0-9a-f-]{36}$/);
    const shared = NomadBackendOptions.parse({ ...rawExec, snapshotDir: "/shared" });
    expect(dispatchRequestOf({ o: shared, now: () => 1 }, spec, "u", "t").meta).not.toHaveProperty(
      META.snapshotDir,
    );
  });

  it("an exec is a one-shot job: the command, the spec's env under the call's, a command's sizing, its deadline", () => {
    const job = execJobOf(rawExec, spec, {
      jobId: "flakegym-exec-1",
      command: "echo hi",
      options: { env: { A: "call", B: "2" }, cwd: "sub" },
      timeoutMs: 5_000,
      nowMs: 10_000,
    });
    expect(job.ID).toBe("flakegym-exec-1");
    const task = job.TaskGroups[0]!.Tasks[0]!;
    // the command and its cwd travel base64-encoded, never interpolated into the shell line
    const b64 = (t: string) => Buffer.from(t).toString("base64");
    expect(task.Config?.args).toEqual(expect.arrayContaining([b64("echo hi"), b64("sub")]));
    expect(task.Resources?.MemoryMB).toBe(2048);
    expect(task.Env).toMatchObject({ A: "call", B: "2" });
    expect(job.Meta?.flakegym_expires).toBe(String(10_000 + 5_000 + rawExec.graceMs));
  });
});
