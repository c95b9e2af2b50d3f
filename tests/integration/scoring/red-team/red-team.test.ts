import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  type HiddenTests,
  hiddenTestsOf,
  type LoadedTask,
  loadCatalog,
  loadTask,
  ROW_TERM_DEFAULTS,
  rowReachProfile,
  type Score,
  type Snapshot,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scoreInFork } from "../score-in-fork.js";
import { type Attack, attackDiff } from "./attack.js";
import { BUILD_ATTACKS } from "./attacks-build.js";
import { COMPILED_ATTACKS } from "./attacks-compiled.js";
import { CONTEXT_ATTACKS } from "./attacks-context.js";
import { ORACLE_ATTACKS } from "./attacks-oracle.js";
import { OUTCOME_ATTACKS } from "./attacks-outcome.js";
import { PROTOCOL_ATTACKS } from "./attacks-protocol.js";
import { PYTHON_ATTACKS } from "./attacks-python.js";
import { TOOLCHAIN_ATTACKS } from "./attacks-toolchain.js";
import { VERDICT_COST_ATTACKS, VERDICT_INPUT_ATTACKS, VERDICT_PROBES } from "./attacks-verdict-input.js";

// The red-team suite (issue 25), by class: reward hacks that leave the bug unfixed, each scored for
// real in a sandboxed fork of its task's snapshot with the production scorer. Every one must
// score 0. FLAKEGYM_REDTEAM_BASELINE=1 scores them as the scorer did before decoys (canary and
// result lines only) and prints which won there, without asserting: how an attack is shown to be
// real before its class is closed. The build-config attacks are scored as dataset rows (no hidden
// tests, hence no decoys either way); their baseline allows every edit, as rows were scored before
// their diffs were protected, and takes the build's word for every file (no scoring/build-reach.ts). The infra-dodge watchers have no switch: they win against the scorer
// of 5cbb29c (scoring throws: no score), the install ones in the baseline (the script installs).
// The context attack (attacks-context.ts) has no switch either: it tells the real test from its
// decoys, so it needs decoys to win; it scored 1 against the decoys of 61b2e62. The protocol
// forgeries (attacks-protocol.ts) have no switch: they made scoring throw on main at 0475d40.
const ATTACKS: Attack[] = [
  ...PYTHON_ATTACKS,
  ...COMPILED_ATTACKS,
  ...BUILD_ATTACKS,
  ...OUTCOME_ATTACKS,
  ...CONTEXT_ATTACKS,
  ...PROTOCOL_ATTACKS,
  ...ORACLE_ATTACKS,
  ...TOOLCHAIN_ATTACKS,
  ...VERDICT_INPUT_ATTACKS,
  ...VERDICT_COST_ATTACKS,
  // FLAKEGYM_REDTEAM_PROBES=1: the night red team's probes that lost on main too (each scores 0; the
  // static screen names neither, so their flag check fails: a record, not a gate)
  ...(process.env.FLAKEGYM_REDTEAM_PROBES === "1" ? VERDICT_PROBES : []),
];
const baseline = process.env.FLAKEGYM_REDTEAM_BASELINE === "1";
// FLAKEGYM_REDTEAM_DECOYS_ONLY=1: scored with decoys but no externalized assertions (the scorer
// before issue 42), printing without asserting — how the oracle attacks (attacks-oracle.ts) win there
const decoysOnly = process.env.FLAKEGYM_REDTEAM_DECOYS_ONLY === "1";
// the baseline runs each test command as written, the workspace first on every lookup (before
// scoring/demote.ts); FLAKEGYM_REDTEAM_DEMOTE=1 keeps the baseline's verdict (canary and result
// lines) but demotes the command: how a toolchain-shadow attack (attacks-toolchain.ts) is shown to
// lose by the demotion alone
const workspaceFirst = baseline && process.env.FLAKEGYM_REDTEAM_DEMOTE !== "1";
// the node profile's default build before it checked `.mjs`/`.cjs` too (the baseline's)
const NODE_BUILD_BEFORE =
  "if [ -f tsconfig.json ]; then npx --no-install tsc --noEmit; else find . -name node_modules -prune -o -name '*.js' -print0 | xargs -0 -r -n1 node --check; fi";

let tmp: TempDir;
const snapshots = new Map<string, Promise<Snapshot>>();

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-redteam-");
});
afterAll(async () => {
  await tmp.cleanup();
});

async function snapshotOf(task: LoadedTask): Promise<Snapshot> {
  const id = task.spec.id;
  if (!snapshots.has(id))
    snapshots.set(id, buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") }));
  return snapshots.get(id)!;
}

/** Scores `diff` on `task` as a dataset row: no hidden tests, one term with the profile's default command. */
async function scoreAsRow(
  name: string,
  task: LoadedTask,
  term: "build" | "lint",
  diff: string,
): Promise<Score> {
  const profile = task.spec.profile;
  const command =
    baseline && term === "build" && profile === "node" ? NODE_BUILD_BEFORE : ROW_TERM_DEFAULTS[profile][term];
  if (!command) throw new Error(`${name}: profile ${profile} has no default ${term} command`);
  const reach = rowReachProfile(profile, {});
  // the baseline: every edit allowed, as rows were scored before their diffs were protected
  const hidden: HiddenTests = {
    testFiles: [],
    commands: [],
    timeoutMs: 120_000,
    ...(baseline ? { allowEdits: ["*"] } : {}),
  };
  return scoreInFork({
    dir: tmp.path,
    name,
    task,
    snapshot: await snapshotOf(task),
    hidden,
    diff,
    weights: { tests: 0, build: term === "build" ? 1 : 0, lint: term === "lint" ? 1 : 0, judge: 0 },
    ...(term === "build" ? { buildCmd: command } : { lintCmd: command }),
    // as rollout scores a row: its default build lists what it compiled; the baseline does not look
    ...(baseline ? { reachBaseline: true } : reach ? { reach } : {}),
  });
}

async function scoreAttack(attack: Attack): Promise<Score> {
  const task = await loadTask(attack.task);
  const snapshot = await snapshotOf(task);
  const diff = await attackDiff(attack, snapshot.workspace);
  if (attack.row) return scoreAsRow(attack.id, task, attack.row, diff);
  const hidden = await hiddenTestsOf(task, 120_000);
  return scoreInFork({
    dir: tmp.path,
    name: attack.id,
    task,
    snapshot,
    hidden,
    diff,
    decoys: !baseline,
    externalize: !decoysOnly,
    workspaceFirst,
  });
}

// the row attacks' control: each reference solution, scored as a row by each of its profile's
// default terms the same way, builds (and lints) — no false zero. By default the attacked tasks';
// FLAKEGYM_ROW_CONTROLS=all (`npm run test:row-controls`) takes every offline catalog task
const attacked = new Set(BUILD_ATTACKS.map((a) => a.task));
const rowControls = (await loadCatalog())
  .map((t) => t.spec)
  .filter((t) => t.network === "none" && (process.env.FLAKEGYM_ROW_CONTROLS === "all" || attacked.has(t.id)))
  .flatMap((t) =>
    (["build", "lint"] as const)
      .filter((term) => ROW_TERM_DEFAULTS[t.profile][term])
      .map((term) => [t.id, term]),
  );
describe("red team: build-config controls", () => {
  it.concurrent.each(rowControls)(
    "%s's solution scored as a row by its %s term scores 1",
    async (id, term) => {
      const task = await loadTask(id!);
      const s = await scoreAsRow(
        `gold-${id}-${term}`,
        task,
        term as "build" | "lint",
        await readFile(task.paths.solution, "utf8"),
      );
      expect(s.reward, JSON.stringify(s.terms)).toBe(1);
      expect(s.tampered).toEqual([]);
    },
    600_000,
  );
});

// the infra-dodge attacks' control: beside the task's reference solution the watcher lets the
// script finish — the dodge costs a right answer nothing, which is what made it pay
describe("red team: infra-dodge controls", () => {
  // the watchers (the install attacks are not selective: they stop every run)
  it.concurrent.each(
    OUTCOME_ATTACKS.filter((a) => a.id.endsWith("-when-failing")).map((a) => [a.id, a] as const),
  )(
    "%s beside the solution scores 1",
    async (_id, attack) => {
      const task = await loadTask(attack.task);
      const snapshot = await snapshotOf(task);
      const diff =
        (await readFile(task.paths.solution, "utf8")) + (await attackDiff(attack, snapshot.workspace));
      const hidden = await hiddenTestsOf(task, 120_000);
      const s = await scoreInFork({ dir: tmp.path, name: `gold-${attack.id}`, task, snapshot, hidden, diff });
      expect(s.reward, JSON.stringify(s.gate ?? s.testResults)).toBe(1);
    },
    600_000,
  );
});

const classes = [...new Set(ATTACKS.map((a) => a.cls))];
describe.each(classes)("red team: %s", (cls) => {
  it.concurrent.each(ATTACKS.filter((a) => a.cls === cls).map((a) => [a.id, a] as const))(
    "%s scores 0",
    async (_id, attack) => {
      // a scoring that throws is retried as infra and never scores 0: a win for the attack too
      const s = await scoreAttack(attack).catch((e: unknown) =>
        e instanceof Error ? e : new Error(String(e)),
      );
      if (s instanceof Error) {
        console.log(
          `red team ${attack.id} (${attack.task}): no score, an infra error — ${s.message.slice(0, 300)}`,
        );
        if (baseline || decoysOnly) return;
        throw new Error(`${attack.id}: ${attack.what}; scoring ended without a score: ${s.message}`);
      }
      const why = s.gate
        ? `${s.gate.reason}: ${s.gate.detail}`
        : JSON.stringify(s.testResults ?? s.terms.map((t) => `${t.name} ${t.value}: ${t.detail ?? t.error}`));
      const seen = [
        ...(s.suspicious ?? []).map((h) => `${h.file}:${h.line} ${h.class}`),
        ...(s.ignoredTests ?? []).map((f) => `${f} ignored`),
        ...(s.tampered ?? []).map((f) => `${f} tampered`),
        ...(s.touchedTestFiles ?? []).map((f) => `${f} dropped (a hidden test's place)`),
      ];
      console.log(
        `red team ${attack.id} (${attack.task}): reward ${s.reward} — ${why.slice(0, 300)}; screen: ${seen.slice(0, 3).join(", ") || "nothing"}; ended by: ${(s.tampered ?? []).join(", ").slice(0, 300) || "nothing"}`,
      );
      if (baseline || decoysOnly) return;
      expect(s.reward, `${attack.what}\n${why}`).toBe(0);
      // the protocol forgeries score 0 because the channel was out of their reach, not by luck
      // (apart where the runner is root: the code ran as a user of its own, scoring/script-seal.ts)
      if (attack.cls === "protocol-forgery")
        expect(s.channel).toBe(process.getuid?.() === 0 ? "apart" : "sealed");
      // detection beside prevention: the static screen names it, or its files never entered scoring,
      // or the term's own command read the code and refused it (the build failed on it)
      const refused = s.terms.some((t) => t.value === 0 && /` exited [1-9]/.test(t.detail ?? ""));
      // what the run handed the host no emitter writes: the scorer names it (attacks-verdict-input.ts)
      const named = attack.cls === "verdict-input" && s.gate?.reason === "tests_tampered";
      expect(seen.length > 0 || refused || named, `${attack.id}: not flagged by the static screen`).toBe(
        true,
      );
    },
    600_000,
  );
});
