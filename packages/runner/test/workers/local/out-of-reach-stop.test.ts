import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { stoppedSupervisorOf } from "../../../src/workers/local/freeze-evidence.js";
import {
  descendantsOf,
  type ProcRow,
  readProcRows,
  stoppedOwnedBy,
} from "../../../src/workers/local/out-of-reach-stop.js";

const row = (pid: number, ppid: number, uid: number, stopped = false): ProcRow => ({
  pid,
  ppid,
  uid,
  stopped,
});

describe("a stop out of the agent's reach", () => {
  const rows = [
    row(10, 1, 0), // bwrap
    row(11, 10, 7, false), // supervisor (the supervisor's user)
    row(12, 11, 7, true), // core, stopped
    row(13, 12, 1000, true), // an agent command, stopped
    row(20, 1, 7, true), // another sandbox's process: not a descendant
  ];

  it("finds descendants only, through every generation", () => {
    expect(descendantsOf(rows, 10).map((r) => r.pid)).toEqual([11, 12, 13]);
  });

  it("names a stopped process of the supervisor's user, not the agent's own stopped command", () => {
    expect(stoppedOwnedBy(rows, 10, 7)?.pid).toBe(12);
    expect(
      stoppedOwnedBy(
        rows.filter((r) => r.pid !== 12),
        10,
        7,
      ),
    ).toBeUndefined();
  });

  it("one user: finds the stopped supervisor by its command line, not another stopped process", () => {
    const one = [row(10, 1, 0), row(11, 10, 5, true), row(12, 11, 5, true), row(13, 12, 5, true)];
    const cmd = (pid: number) =>
      pid === 11
        ? "node\0/x/supervisor/cline-supervisor.mjs\0--forward\0a"
        : pid === 13
          ? "sleep\0cline-supervisor.mjs.bak"
          : "node\0core.js";
    expect(stoppedSupervisorOf(one, 10, cmd)?.pid).toBe(11);
    expect(
      stoppedSupervisorOf(
        one.filter((r) => r.pid !== 11),
        10,
        cmd,
      ),
    ).toBeUndefined();
  });

  it("ends on a parent loop in the rows", () => {
    expect(descendantsOf([row(1, 2, 0), row(2, 1, 0)], 1).map((r) => r.pid)).toEqual([2]);
  });

  it("reads a real stopped child from /proc", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      await new Promise((r) => child.once("spawn", r));
      process.kill(child.pid as number, "SIGSTOP");
      await new Promise((r) => setTimeout(r, 200));
      const uid = process.getuid?.() ?? 0;
      expect(stoppedOwnedBy(readProcRows(), process.pid, uid)?.pid).toBe(child.pid);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
