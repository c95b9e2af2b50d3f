import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir, runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

const hasBwrap = existsSync("/usr/bin/bwrap");
if (!hasBwrap) console.warn("snapshot CLI suite skipped: bubblewrap (bwrap) is not installed");

describe.skipIf(!hasBwrap)("flakegym snapshot build (real processes)", () => {
  it("two processes asking for the same snapshot build it once; the other waits and reuses it", async () => {
    await using dir = await makeTempDir();
    const args = ["snapshot", "build", "--task", "strbuf-repr-escapes", "--cache-dir", dir.path];
    const [a, b] = await Promise.all([runCli(args), runCli(args)]);
    expect([a.exitCode, b.exitCode]).toEqual([0, 0]);
    const outs = [a.stdout, b.stdout].sort();
    expect(outs[0]).toMatch(/^built [0-9a-f]{64} in \d+ ms/);
    expect(outs[1]).toMatch(/^cached [0-9a-f]{64} in \d+ ms/);
    expect(outs[0]).toContain("install: task (the task's own install list; network none)");
    // progress is plain lines when not a TTY, and names each step
    const progress = a.stdout.startsWith("built") ? a.stderr : b.stderr;
    expect(progress).toMatch(/ok {3}install: make -s \(\d+ ms\)/);
    expect(progress).toMatch(/ok {3}smoke: make -s check \(\d+ ms\)/);
    const entries = readdirSync(dir.path).filter((n) => /^[0-9a-f]{64}$/.test(n));
    expect(entries).toHaveLength(1);
    expect(existsSync(join(dir.path, entries[0]!, "manifest.json"))).toBe(true);
    expect(readdirSync(join(dir.path, "locks"))).toEqual([]);
  });

  it("a network-only task fails fast offline, saying it needs network", async () => {
    await using dir = await makeTempDir();
    const started = Date.now();
    const r = await runCli(["snapshot", "build", "--task", "ratatui-2148", "--cache-dir", dir.path]);
    if (r.exitCode === 0) {
      console.warn("this machine has network: ratatui-2148 built; the offline fail-fast check did not run");
      return;
    }
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("task 'ratatui-2148' needs network");
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

describe("flakegym tasks (real process)", () => {
  it("tasks check lists rejected rows and exits 1; a clean file exits 0", async () => {
    // three independent processes, at once
    const [bad, ok, clean] = await Promise.all([
      runCli(["tasks", "check", "--dataset", "tests/fixtures/swe-agent-13k-bad.jsonl"]),
      runCli(["tasks", "check", "--dataset", "tests/fixtures/swe-agent-13k-sample.parquet", "--json"]),
      runCli(["tasks", "check", "--dataset", "tests/fixtures/swe-agent-13k-sample.jsonl"]),
    ]);
    expect(bad.exitCode).toBe(1);
    expect(bad.stdout).toContain(
      "tests/fixtures/swe-agent-13k-bad.jsonl:2: [no-repo] field 'repo_name': missing",
    );
    expect(bad.stdout).toContain("10 rows, 2 accepted, 8 rejected");
    const body = JSON.parse(ok.stdout);
    expect(body.summary).toMatchObject({ format: "parquet", rows: 8, accepted: 7, rejected: 1 });
    expect(ok.exitCode).toBe(1);
    expect(clean.exitCode).toBe(0);
    expect(clean.stdout).toContain("7 rows, 7 accepted, 0 rejected");
  });

  it("tasks show <id> prints the whole spec; --json parses; an unknown id names the known ones", async () => {
    // three independent processes, at once
    const [r, json, missing] = await Promise.all([
      runCli(["tasks", "show", "tinygauge-vertical"]),
      runCli(["tasks", "show", "ratatui-2148", "--json"]),
      runCli(["tasks", "show", "nope"]),
    ]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/suite +cargo test --offline --no-fail-fast \(libtest results; 6 fail_to_pass/);
    expect(r.stdout).toContain("Add support for vertical gauges");
    const j = JSON.parse(json.stdout);
    expect(j.source.rev).toBe("527e1df9296e4b6d56dc665788ce558558b480c6");
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toMatch(/known tasks: .*ratatui-2148/);
  });

  it("tasks list shows every catalog task with its network need", async () => {
    const r = await runCli(["tasks", "list"]);
    expect(r.stdout).toMatch(/ratatui-2148 +rust +required/);
    expect(r.stdout).toMatch(/tinyini-interpolation +python +none/);
  });
});
