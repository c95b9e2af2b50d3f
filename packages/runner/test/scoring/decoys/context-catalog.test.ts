import { describe, expect, it } from "vitest";
import { guardHidden } from "../../../src/scoring/decoys/guard-hidden.js";
import { hiddenTestsOf } from "../../../src/scoring/hidden-tests.js";
import { installedHiddenFiles } from "../../../src/scoring/read-only.js";
import { loadCatalog } from "../../../src/tasks/catalog.js";
import { forgerTellsReal } from "../../helpers/counting-forger.js";

// Every offline catalog task's decoys against the counting forger of red-team attack
// py-real-value-from-context (test/helpers/counting-forger.ts): over seeded draws, it must never tell
// every FAIL_TO_PASS test's real copy from its decoys at once (what it needs to score 1). Measured
// 2026-11-26 with 10 draws per task: before decoy values were chosen by context it won 41 of 150
// task-draws (five tasks); after, 10 — all on stats-empty-mean, whose only literal, "None", is also
// the code `None` of the assertion beside it. Since libtest integration tests are externalized
// (scoring/externalize/rust.ts, 2026-12-07) that literal never enters the sandbox: 0 there too.
const EXPOSED: Record<string, string> = {};

const DRAWS = 10;

describe("decoy values by context, on every offline catalog task", async () => {
  const tasks = (await loadCatalog()).filter((t) => t.spec.network === "none");
  it.each(tasks.map((t) => [t.spec.id, t] as const))(
    "%s: a counting forger reading the hidden files does not tell every failing test from its decoys",
    async (id, task) => {
      const hidden = await hiddenTestsOf(task, 1000);
      const suite = hidden.suite;
      if (!suite) throw new Error(`${id}: not a suite task (every offline catalog task is one)`);
      const repo = task.paths.sourceDir ?? `${task.dir}/repo`;
      const plain = await installedHiddenFiles(hidden, repo, undefined);
      if (!plain) throw new Error(`${id}: its hidden files could not be computed from ${repo}`);
      let seed = 11;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      let wins = 0;
      for (let d = 0; d < DRAWS; d++) {
        const g = await guardHidden(suite, plain, repo, rand);
        if (suite.failToPass.every((f) => forgerTellsReal(suite.results, g.files, g.plan, f))) wins++;
      }
      console.log(`${id}: the counting forger told every failing test in ${wins} of ${DRAWS} draws`);
      if (EXPOSED[id]) expect(wins, EXPOSED[id]).toBeGreaterThan(0);
      else expect(wins).toBe(0);
    },
    60_000,
  );
});
