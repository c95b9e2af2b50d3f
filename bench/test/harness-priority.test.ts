import { fork } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  describePolicy,
  harnessLauncher,
  hasTool,
  parseHarnessPriority,
  policyOfStat,
} from "../scale/harness-priority.js";

const all = () => true;

describe("harness priority", () => {
  it("parses the flag and names a wrong value", () => {
    expect(parseHarnessPriority("idle")).toBe("idle");
    expect(() => parseHarnessPriority("low")).toThrow(
      /--harness-priority must be idle, nice or normal, not 'low'/,
    );
  });

  it("wraps node in chrt --idle 0 or nice -n 19, and runs it bare at normal", () => {
    expect(harnessLauncher("idle", "/n/node", all)).toEqual({
      execPath: "chrt",
      prefix: ["--idle", "0", "/n/node"],
    });
    expect(harnessLauncher("nice", "/n/node", all)).toEqual({
      execPath: "nice",
      prefix: ["-n", "19", "/n/node"],
    });
    expect(harnessLauncher("normal", "/n/node", () => false)).toEqual({ execPath: "/n/node", prefix: [] });
  });

  it("refuses a missing wrapper by name instead of running the harness at normal priority", () => {
    expect(() => harnessLauncher("idle", "node", (t) => t !== "chrt")).toThrow(/needs 'chrt' on PATH/);
  });

  it("reads the policy and nice value after a command with spaces and parentheses", () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    fields[19 - 3] = "19";
    fields[41 - 3] = "5";
    expect(policyOfStat(`42 (node (x) y) ${fields.join(" ")}`)).toEqual({ policy: "idle", nice: 19 });
    fields[41 - 3] = "0";
    expect(policyOfStat(`42 (n) ${fields.join(" ")}`)).toEqual({ policy: "normal", nice: 19 });
    expect(policyOfStat("42 (n) R")).toBeUndefined();
  });

  it.skipIf(!hasTool("chrt"))(
    "a process forked through the idle launcher runs every thread at SCHED_IDLE, IPC intact (needs chrt)",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "fg-harness-prio-"));
      let child: ReturnType<typeof fork> | undefined;
      try {
        const file = join(dir, "child.mjs");
        await writeFile(file, "process.on('message', () => process.send('pong'));\n");
        const l = harnessLauncher("idle", process.execPath, hasTool);
        const c = fork(file, [], { execPath: l.execPath, execArgv: [...l.prefix], stdio: "ignore" });
        child = c;
        // the child answers once node runs (chrt has exec'd it): its threads exist by then
        const policy = await new Promise<string>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error("the forked child did not answer in 20 s")), 20_000);
          c.once("message", () => {
            clearTimeout(t);
            resolve(describePolicy(c.pid ?? -1));
          });
          c.send("ping");
        });
        expect(policy).toMatch(/^idle ×\d+$/);
        expect(describePolicy(process.pid)).not.toMatch(/idle/);
      } finally {
        child?.kill("SIGKILL");
        await rm(dir, { recursive: true, force: true });
      }
    },
    30_000,
  );
});
