import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardHidden } from "../../../../packages/runner/src/scoring/decoys/guard-hidden.js";
import { hiddenTestsOf } from "../../../../packages/runner/src/scoring/hidden-tests.js";
import { installedHiddenFiles } from "../../../../packages/runner/src/scoring/read-only.js";
import { loadCatalog } from "../../../../packages/runner/src/tasks/catalog.js";
import { oracleTellsReal } from "./oracle-pick.js";

// The red team's decoy oracle (oracle-pick.ts: prompt mention, custom exception, nearest
// inversion) against every offline catalog task's guarded hidden files, over DRAWS seeded draws
// of the project's own generator. The oracle wins a draw when it tells every FAIL_TO_PASS test's
// real copy from its decoys (what a forger needs to score 1); an externalized F2P test has no
// copies to tell (its expected values are not in the sandbox), so it cannot be won.

const DRAWS = 40;

/** `ORACLE_BASELINE=1`: decoys only, balanced against the hidden files only (the scorer before issue 42's work). */
const BASELINE = process.env.ORACLE_BASELINE === "1";

// Measured 2026-12-07, 40 draws: before decoys were balanced against the prompt and the repository
// (decoys/readable.ts) the mention rule told 29 of 80 b64-two-byte-tail copies, after 12; the
// draws won stayed 0 on every task but stats-empty-mean, whose only literal, None, is also written
// as code beside it (context-catalog.test.ts). Since libtest integration tests are externalized
// (scoring/externalize/rust.ts) that task has no decoy copies left to tell: 0 of 40 there too.
const EXPOSED: Record<string, string> = {};

/** What the agent can read besides the hidden tests: the prompt and the repository's text files. */
async function readable(prompt: string, repo: string, hidden: ReadonlySet<string>): Promise<string> {
  const parts = [prompt];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(join(repo, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === ".git" || e.name === "node_modules" || e.name === "target") continue;
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && !hidden.has(p)) {
        const b = await readFile(join(repo, p));
        if (b.length < 512 * 1024 && !b.includes(0)) parts.push(b.toString("utf8"));
      }
    }
  };
  await walk("");
  return parts.join("\n");
}

/** 40 draws per task take minutes of CPU (the host rewriters run per draw): opt-in, `npm run test:oracle-draws`. */
const ON = process.env.FLAKEGYM_ORACLE_DRAWS === "1";
if (!ON)
  console.log("skipped the decoy oracle's draws: set FLAKEGYM_ORACLE_DRAWS=1 (npm run test:oracle-draws)");

describe.skipIf(!ON)("the red team's decoy oracle, on every offline catalog task", async () => {
  const tasks = (await loadCatalog()).filter((t) => t.spec.network === "none");
  const results: Record<string, string> = {};
  it.each(tasks.map((t) => [t.spec.id, t] as const))(
    "%s: the oracle does not tell every failing test from its decoys",
    async (id, task) => {
      const hidden = await hiddenTestsOf(task, 1000);
      const suite = hidden.suite;
      if (!suite) throw new Error(`${id}: not a suite task (every offline catalog task is one)`);
      const repo = task.paths.sourceDir ?? `${task.dir}/repo`;
      const plain = await installedHiddenFiles(hidden, repo, undefined);
      if (!plain) throw new Error(`${id}: its hidden files could not be computed from ${repo}`);
      const text = await readable(task.spec.prompt, repo, new Set(plain.map((f) => f.path)));
      let seed = 29;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return Math.floor((seed / 2 ** 31) * n); // the high bits: an LCG's low bits cycle
      };
      let wins = 0;
      let told = 0;
      let decoyed = 0;
      const rules = new Map<string, number>();
      for (let d = 0; d < DRAWS; d++) {
        const g = await guardHidden(
          suite,
          plain,
          repo,
          rand,
          undefined,
          !BASELINE,
          BASELINE ? undefined : task.spec.prompt,
        );
        const ext = new Set(g.report.externalized ?? []);
        const picks = suite.failToPass.map((f) =>
          ext.has(f) ? undefined : oracleTellsReal(suite.results, g.files, g.plan, f, text),
        );
        decoyed += suite.failToPass.filter((f) => !ext.has(f)).length;
        for (const p of picks) if (p) rules.set(p, (rules.get(p) ?? 0) + 1);
        told += picks.filter((p) => p !== undefined).length;
        if (picks.every((p) => p !== undefined)) wins++;
      }
      results[id] =
        `${wins}/${DRAWS} draws won; ${told} of ${decoyed} decoyed F2P copies told (${[...rules].map(([r, n]) => `${r} ${n}`).join(", ") || "no rule"})`;
      console.log(`${id} (${suite.results}): ${results[id]}`);
      if (BASELINE) return;
      if (EXPOSED[id]) expect(wins, EXPOSED[id]).toBeGreaterThan(0);
      else expect(wins, `${id}: the oracle told every failing test in ${wins} of ${DRAWS} draws`).toBe(0);
    },
    120_000,
  );
});
