import { access, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

/**
 * Bad input to `rollout` and `tasks check` is a usage error (exit 2) found before anything runs:
 * no run directory, no worker, no retry. The real CLI process; nothing here boots a core. Each
 * spec and plan problem is covered by the unit tests of validatePolicySpecs; one of them here shows
 * the check runs before the run directory exists.
 */

const TASK = "semver-lite-caret-zero";
const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe("rollout: bad input is a usage error before any run directory", () => {
  it.each([
    [
      "a binary plan file",
      ["--policy", "scripted:PLAN_DIR/plan.bin"],
      /'.*plan\.bin' is a binary file, not a JSON plan/,
    ],
    [
      "an unknown task",
      ["--policy", "empty", "--task", "no-such-task"],
      /--task no-such-task: no task 'no-such-task'/,
    ],
  ])("%s exits 2 naming it", async (_, flags, message) => {
    await using dir = await makeTempDir("fg-rollout-input-");
    await writeFile(join(dir.path, "plan.bin"), Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, 0x00]));
    const out = join(dir.path, "run");
    const args = flags.map((f) => f.replace("PLAN_DIR", dir.path));
    const task = args.includes("--task") ? [] : ["--task", TASK];
    const r = await runCli(["rollout", ...task, ...args, "--out", out], { timeoutMs: 60_000 });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain("--resume");
    expect(await exists(out)).toBe(false);
  });

  it("--out at a file exits 2 saying so", async () => {
    await using dir = await makeTempDir("fg-rollout-input-");
    const file = join(dir.path, "taken");
    await writeFile(file, "mine");
    const r = await runCli(["rollout", "--task", TASK, "--policy", "empty", "--out", file], {
      timeoutMs: 60_000,
    });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/--out .*taken: .*taken is a file/);
    expect(r.stderr).not.toContain("EEXIST");
  });
});

describe("tasks check", () => {
  it("a binary file exits 2 without printing its bytes", async () => {
    await using dir = await makeTempDir("fg-tasks-check-");
    const file = join(dir.path, "rows.jsonl");
    await writeFile(
      file,
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x1b, 0x5b, 0x32, 0x4a]),
    );
    const r = await runCli(["tasks", "check", "--dataset", file], { timeoutMs: 60_000 });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/rows\.jsonl is a binary file, neither JSONL text nor Parquet/);
    const printed = `${r.stdout}${r.stderr}`;
    expect(printed).not.toContain(String.fromCharCode(0));
    expect(printed).not.toContain(String.fromCharCode(0x1b));
  });
});
