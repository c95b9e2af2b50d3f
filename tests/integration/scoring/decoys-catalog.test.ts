import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  createLocalBackend,
  forkSnapshot,
  hiddenTestsOf,
  loadCatalog,
  prepareReadOnlyHidden,
  scoreDiff,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Every offline catalog task, scored for real with its decoys (scoring/decoys): the reference
// solution scores 1 with every decoy reported failed, no change scores 0, and every graded test
// of every task is guarded by a decoy.
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
      const backend = createLocalBackend({ stateDir: join(tmp.path, "workers") });
      const hidden = await hiddenTestsOf(task, 240_000);
      const gold = await readFile(task.paths.solution, "utf8");
      const score = async (name: string, diff: string) => {
        const fork = await forkSnapshot(snapshot, {
          dest: join(tmp.path, "forks", `${task.spec.id}-${name}`),
          quotaMb: task.spec.limits.diskMb,
        });
        const prepared = await prepareReadOnlyHidden("local", hidden, snapshot.workspace);
        expect(prepared, "hidden files computed on the host").toBeDefined();
        const worker = await backend.start({
          runId: "decoys-test",
          taskId: task.spec.id,
          trajectoryId: name,
          profile: task.spec.profile,
          workspace: fork.workspace,
          depsDir: fork.deps,
          gateway: {},
          limits: { ...task.spec.limits, wallClockMs: 300_000 },
          agent: false,
          ...(prepared?.readOnly ? { readOnlyFiles: prepared.readOnly.files } : {}),
        });
        try {
          return await scoreDiff(
            worker,
            diff,
            hidden,
            {
              partialCredit: "none",
              weights: { tests: 1, build: 0, lint: 0, judge: 0 },
              repeat: 1,
              termTimeoutMs: 60_000,
              taskPrompt: task.spec.prompt,
              bound: prepared!.bound,
            },
            AbortSignal.timeout(280_000),
          );
        } finally {
          await worker.stop();
          await prepared?.readOnly?.release();
          await fork.release();
        }
      };
      const [g, e] = await Promise.all([score("gold", gold), score("empty", "")]);
      expect(g.gate, JSON.stringify(g.terms)).toBeUndefined();
      expect(g.reward).toBe(1);
      expect(g.decoys?.unguarded).toEqual([]);
      expect(g.decoys?.guarded.length).toBe(
        task.spec.tests.run.kind === "suite"
          ? task.spec.tests.run.failToPass.length + task.spec.tests.run.passToPass.length
          : -1,
      );
      expect(e.reward).toBe(0);
    }, 600_000);
  }
});
