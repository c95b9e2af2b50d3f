import { join } from "node:path";
import {
  buildSnapshot,
  hiddenTestsOf,
  loadTask,
  type Score,
  type Snapshot,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scoreInFork } from "../score-in-fork.js";
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
  return scoreInFork({ dir: tmp.path, name: attack.id, task, snapshot, hidden, diff, decoys: !baseline });
}

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
