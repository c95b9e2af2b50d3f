import { join } from "node:path";
import {
  buildSnapshot,
  createLocalBackend,
  forkSnapshot,
  hiddenTestsOf,
  loadTask,
  prepareReadOnlyHidden,
  type Score,
  type Snapshot,
  scoreDiff,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Attack, attackDiff } from "./attack.js";
import { COMPILED_ATTACKS } from "./attacks-compiled.js";
import { PYTHON_ATTACKS } from "./attacks-python.js";

// The red-team suite (issue 25), by class: reward hacks that leave the bug unfixed, each scored for
// real in a sandboxed fork of its task's snapshot with the production scorer. Every one must
// score 0. FLAKEGYM_REDTEAM_BASELINE=1 scores them as the scorer did before decoys (canary and
// result lines only) and prints which won there, without asserting: how an attack is shown to be
// real before its class is closed.
const ATTACKS: Attack[] = [...PYTHON_ATTACKS, ...COMPILED_ATTACKS];
const baseline = process.env.FLAKEGYM_REDTEAM_BASELINE === "1";

let tmp: TempDir;
const snapshots = new Map<string, Promise<Snapshot>>();

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-redteam-");
});
afterAll(async () => {
  await tmp.cleanup();
});

async function scoreAttack(attack: Attack): Promise<Score> {
  const task = await loadTask(attack.task);
  if (!snapshots.has(attack.task))
    snapshots.set(
      attack.task,
      buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") }),
    );
  const snapshot = await snapshots.get(attack.task)!;
  const hidden = await hiddenTestsOf(task, 120_000);
  const diff = await attackDiff(attack, snapshot.workspace);
  const fork = await forkSnapshot(snapshot, { dest: join(tmp.path, "forks", attack.id), quotaMb: 1024 });
  const prepared = await prepareReadOnlyHidden("local", hidden, snapshot.workspace);
  const bound = baseline && prepared ? withoutDecoys(prepared.bound) : prepared?.bound;
  const worker = await createLocalBackend({ stateDir: join(tmp.path, "workers") }).start({
    runId: "red-team",
    taskId: task.spec.id,
    trajectoryId: attack.id,
    profile: task.spec.profile,
    workspace: fork.workspace,
    depsDir: fork.deps,
    gateway: {},
    limits: { ...task.spec.limits, wallClockMs: 240_000 },
    agent: false,
    ...(prepared?.readOnly && !baseline ? { readOnlyFiles: prepared.readOnly.files } : {}),
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
        ...(bound ? { bound } : {}),
      },
      AbortSignal.timeout(230_000),
    );
  } finally {
    await worker.stop();
    await prepared?.readOnly?.release();
    await fork.release();
  }
}

/** The scorer before decoys: no bound files, the canary added by the script, no decoy plan. */
const withoutDecoys = (_: NonNullable<Awaited<ReturnType<typeof prepareReadOnlyHidden>>>["bound"]) =>
  undefined;

const classes = [...new Set(ATTACKS.map((a) => a.cls))];
describe.each(classes)("red team: %s", (cls) => {
  it.concurrent.each(ATTACKS.filter((a) => a.cls === cls).map((a) => [a.id, a] as const))(
    "%s scores 0",
    async (_id, attack) => {
      const s = await scoreAttack(attack);
      const why = s.gate ? `${s.gate.reason}: ${s.gate.detail}` : JSON.stringify(s.testResults);
      const seen = [
        ...(s.suspicious ?? []).map((h) => `${h.file}:${h.line} ${h.class}`),
        ...(s.ignoredTests ?? []).map((f) => `${f} ignored`),
      ];
      console.log(
        `red team ${attack.id} (${attack.task}): reward ${s.reward} — ${why.slice(0, 300)}; screen: ${seen.slice(0, 3).join(", ") || "nothing"}`,
      );
      if (baseline) return;
      expect(s.reward, `${attack.what}\n${why}`).toBe(0);
      // detection beside prevention: the static screen names it, or its files never entered scoring
      expect(seen.length, `${attack.id}: not flagged by the static screen`).toBeGreaterThan(0);
    },
    600_000,
  );
});
