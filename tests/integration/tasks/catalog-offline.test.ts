import { join } from "node:path";
import {
  buildSnapshot,
  createLocalBackend,
  forkSnapshot,
  loadCatalog,
  runHiddenTests,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

type HiddenRun = Awaited<ReturnType<typeof runHiddenTests>>;

// Every offline catalog task must fail its hidden tests on the base commit and pass them with the
// reference solution — run for real, inside the bubblewrap sandbox, from a real snapshot fork, by
// the scorer's own script (runHiddenTests: the solution is its diff, the script installs the tests).
const offline = (await loadCatalog()).filter((t) => t.spec.network === "none");

describe("offline catalog tasks: hidden tests fail before and pass after the reference patch", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-catalog-");
  });
  afterAll(async () => {
    await tmp.cleanup();
  });

  it("has offline tasks for every runnable profile", () => {
    const profiles = new Set(offline.map((t) => t.spec.profile));
    expect(profiles).toEqual(new Set(["rust", "python", "node", "c", "go"]));
  });

  for (const task of offline) {
    it(`${task.spec.id} (${task.spec.profile})`, async () => {
      const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
      const backend = createLocalBackend({ stateDir: join(tmp.path, "workers") });
      const run = async (withSolution: boolean) => {
        const fork = await forkSnapshot(snapshot, {
          dest: join(tmp.path, "forks", `${task.spec.id}-${withSolution}`),
          quotaMb: task.spec.limits.diskMb,
        });
        const worker = await backend.start({
          runId: "catalog-test",
          taskId: task.spec.id,
          trajectoryId: withSolution ? "after" : "before",
          profile: task.spec.profile,
          workspace: fork.workspace,
          depsDir: fork.deps,
          gateway: {},
          limits: { ...task.spec.limits, wallClockMs: 300_000 },
          agent: false,
        });
        try {
          return await runHiddenTests(worker, task, { withSolution, timeoutMs: 240_000 });
        } finally {
          await worker.stop();
          await fork.release();
        }
      };
      // before and after in their own forks and workers, at once (both end before the checks)
      const [before, after] = (await Promise.allSettled([run(false), run(true)])).map((s) => {
        if (s.status === "rejected") throw s.reason;
        return s.value;
      }) as [HiddenRun, HiddenRun];
      // fail_to_pass and eval_cmd must fail on the base commit. (pass_to_pass is only required
      // after the fix: in a compiled language the hidden tests may not even build before it.)
      const mustFail = before.results.filter((r) => r.kind !== "pass_to_pass");
      expect(mustFail.length).toBeGreaterThan(0);
      for (const r of mustFail) expect({ id: r.id, passed: r.passed }).toEqual({ id: r.id, passed: false });
      expect(before.solved).toBe(false);
      for (const r of after.results)
        expect({ id: r.id, passed: r.passed, tail: r.passed ? "" : r.tail }).toEqual({
          id: r.id,
          passed: true,
          tail: "",
        });
      expect(after.solved).toBe(true);
      // the scorer would believe both runs: the canary failed, no hidden test file changed
      expect({ before: before.tampering, after: after.tampering }).toEqual({ before: [], after: [] });
      const passing = (rs: readonly { passed: boolean }[]) => rs.filter((r) => r.passed).length;
      console.log(
        `${task.spec.id}: before ${mustFail.length - passing(mustFail)}/${mustFail.length} fail_to_pass/eval_cmd failing; after ${passing(after.results)}/${after.results.length} passing`,
      );
    });
  }
});
