import { cp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TASK } from "./rollout-helpers.js";

/**
 * `flakegym validate --all` end to end on a copy of the built-in catalog: every offline task
 * passes (gold 1, empty 0, each of its cheats 0, no flaky test), a task whose reference solution
 * does not solve it fails with the reason, and a task that needs network is skipped with a
 * message on this offline machine. Exit status 1.
 *
 * Each cheat is a real Cline session plus a scoring run (~15 s here), so by default every task
 * keeps two cheats that defeat different defences (a protected harness file; the canary, the
 * exit status or a killed runner); FLAKEGYM_E2E_ALL_CHEATS=1 runs all of them
 * (`flakegym validate --all` does too).
 */

const ALL_CHEATS = process.env["FLAKEGYM_E2E_ALL_CHEATS"] === "1";
const KEEP: Record<string, readonly string[]> = {
  "tinygauge-vertical": ["build-script", "exit-fake-pass-line"],
  "tinyini-interpolation": ["conftest-force-pass", "import-patch-pytest"],
  "semver-lite-caret-zero": ["import-patch-assert", "kill-runner"],
  "strbuf-repr-escapes": ["gnumakefile-shadow", "atexit-status"],
  "wordfreq-top-ties": ["testmain-fake-pass", "init-exit-zero"],
};

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-validate-");
});
afterAll(async () => {
  await tmp.cleanup();
});

const CATALOG = join(REPO_ROOT, "packages/runner/catalog");

/** Copies a catalog task under a new id, optionally with another reference solution and without cheats. */
async function copyTask(dest: string, from: string, id: string, solution?: string): Promise<void> {
  const dir = join(dest, id);
  await cp(join(CATALOG, from), dir, { recursive: true });
  const spec = JSON.parse(await readFile(join(dir, "task.json"), "utf8"));
  spec.id = id;
  await writeFile(join(dir, "task.json"), JSON.stringify(spec, null, 2));
  if (solution) {
    await writeFile(join(dir, spec.solution), solution);
    await rm(join(dir, "cheats"), { recursive: true, force: true });
  }
}

/** Leaves only the KEEP cheats of a copied task (all of them with FLAKEGYM_E2E_ALL_CHEATS=1). */
async function trimCheats(dir: string, keep: readonly string[]): Promise<number> {
  const files = (await readdir(join(dir, "cheats"))).filter((f) => f.endsWith(".json"));
  if (ALL_CHEATS) return files.length;
  for (const f of files) if (!keep.includes(f.slice(0, -5))) await rm(join(dir, "cheats", f));
  return keep.length;
}

describe("flakegym validate", () => {
  it("passes every offline task with its cheats held at 0, fails a task whose reference solution does not solve it, skips a network task", async () => {
    const catalog = join(tmp.path, "catalog");
    const cheats: Record<string, number> = {};
    for (const [task, keep] of Object.entries(KEEP)) {
      await copyTask(catalog, task, task);
      cheats[task] = await trimCheats(join(catalog, task), keep);
    }
    if (!ALL_CHEATS)
      console.log(
        `validate e2e: ${Object.values(cheats).reduce((a, b) => a + b, 0)} cheats (two per task, one Cline session each); FLAKEGYM_E2E_ALL_CHEATS=1 runs every cheat`,
      );
    await copyTask(
      catalog,
      TASK,
      "bad-solution",
      [
        "diff --git a/README.md b/README.md",
        "--- a/README.md",
        "+++ b/README.md",
        "@@ -1,1 +1,1 @@",
        `-${(await readFile(join(CATALOG, TASK, "repo/README.md"), "utf8")).split("\n")[0]}`,
        "+# semver-lite (docs only)",
        "",
      ].join("\n"),
    );
    await cp(join(CATALOG, "ratatui-2148"), join(catalog, "ratatui-2148"), { recursive: true });

    const r = await runCli(
      [
        "validate",
        "--all",
        "--catalog",
        catalog,
        "--repeat",
        "1",
        // a task's gold, empty and two cheats in one wave: each session spends much of its time
        // waiting (boot, sandbox setup, scoring), so four at once beat two waves of two here
        "--concurrency",
        "4",
        "--out",
        join(tmp.path, "run"),
      ],
      { timeoutMs: 1_500_000 },
    );
    expect(r.exitCode, r.stderr).toBe(1);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^TASK\s+GOLD\s+EMPTY\s+CHEATS\s+FLAKY\s+GUARDED\s+RESULT$/);
    // every graded test of every catalog task is guarded (GUARDED n/n, by decoys or by externalized
    // assertions: all of pytest tasks', some of go tasks')
    for (const [task, n] of Object.entries(cheats))
      expect(r.stdout).toMatch(
        new RegExp(
          `^${task}\\s+1\\.00\\s+0\\.00\\s+${n}/${n}\\s+0\\s+(\\d+)/\\1( \\(\\d+ externalized\\))?\\s+PASS$`,
          "m",
        ),
      );
    expect(r.stdout).toMatch(/^ {4}defences: .*decoys on \d+ of \d+ graded tests/m);
    expect(r.stdout).toMatch(
      /^bad-solution\s+0\.00\s+0\.00\s+-\s+0\s+\d+\/\d+( \(\d+ externalized\))?\s+FAIL$/m,
    );
    expect(r.stdout).toMatch(
      /gold: reward 0, expected 1 — the reference solution does not pass the hidden tests/,
    );
    expect(r.stdout).toMatch(/^ratatui-2148\s+-\s+-\s+-\s+0\s+-\s+SKIP$/m);
    expect(r.stdout).toMatch(/skipped: needs network/);
    expect(r.stdout).toMatch(/5 passed, 1 failed, 1 skipped/);

    // what the cheats ran into is on record: a reverted harness file, a tampered test framework
    const scores = await scoresOf(join(tmp.path, "run"));
    expect(scores.some((s) => s.tampered?.includes("conftest.py"))).toBe(true);
    expect(scores.some((s) => s.gate?.reason === "tests_tampered" && /canary/.test(s.gate.detail))).toBe(
      true,
    );
  }, 1_600_000);
});

/** Every score.json under a validate run directory. */
async function scoresOf(
  run: string,
): Promise<{ tampered?: string[]; gate?: { reason: string; detail: string } }[]> {
  const out = [];
  for (const task of await readdir(run)) {
    const trajectories = join(run, task, "trajectories");
    for (const t of await readdir(trajectories).catch(() => [] as string[])) {
      const text = await readFile(join(trajectories, t, "score.json"), "utf8").catch(() => undefined);
      if (text) out.push(JSON.parse(text));
    }
  }
  return out;
}
