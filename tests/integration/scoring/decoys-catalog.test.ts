import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { buildSnapshot, hiddenTestsOf, loadCatalog, snapshotSpecOfTask } from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scoreInFork } from "./score-in-fork.js";

// Every offline catalog task, scored for real with its decoys (scoring/decoys): the reference
// solution scores 1 with every decoy reported failed, no change scores 0, and every graded test
// of every task is guarded by a decoy or externalized (scoring/externalize).
const offline = (await loadCatalog()).filter((t) => t.spec.network === "none");

describe("decoys on every offline catalog task", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-decoys-");
  });
  afterAll(async () => {
    await tmp.cleanup();
  });

  for (const task of offline) {
    it(`${task.spec.id} (${task.spec.profile}): gold 1 with every test guarded, empty 0`, async () => {
      const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
      const hidden = await hiddenTestsOf(task, 240_000);
      const gold = await readFile(task.paths.solution, "utf8");
      const score = (name: string, diff: string) =>
        scoreInFork({ dir: tmp.path, name, task, snapshot, hidden, diff });
      const [g, e] = await Promise.all([score("gold", gold), score("empty", "")]);
      console.log(`${task.spec.id}: decoys ${JSON.stringify(g.decoys)}`);
      expect(g.gate, JSON.stringify(g.terms)).toBeUndefined();
      expect(g.reward).toBe(1);
      expect(g.decoys?.unguarded).toEqual([]);
      // guarded by a decoy, or externalized (its expected values never entered the sandbox)
      expect((g.decoys?.guarded.length ?? 0) + (g.decoys?.externalized?.length ?? 0)).toBe(
        task.spec.tests.run.kind === "suite"
          ? task.spec.tests.run.failToPass.length + task.spec.tests.run.passToPass.length
          : -1,
      );
      expect(e.reward).toBe(0);
    }, 600_000);
  }
});
