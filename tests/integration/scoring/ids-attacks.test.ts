import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  capabilitiesOf,
  type HiddenTests,
  hiddenTestsOf,
  type LoadedTask,
  loadTaskDir,
  prepareReadOnlyHidden,
  type Snapshot,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRunOf } from "../../../packages/runner/src/tasks/test-runners.js";
import { IDS_ATTACKS } from "./ids-attacks.js";
import { fileDiff } from "./red-team/attack.js";
import { scoreInFork } from "./score-in-fork.js";

/**
 * Attacks on a per-id task (kind `ids`: one jest command per graded id, a pass = exit 0 and a
 * `Tests: … passed` line): the code under test runs inside the jest process and forges the verdict
 * (ids-attacks.ts). Each leaves the bug unfixed and must score 0 beside the decoy twin run; the
 * reference solution scores 1 and the empty change 0. `FLAKEGYM_IDS_BASELINE=1` scores the attacks
 * without the twin (the scorer before it) and expects each to WIN there. jest comes from the npm
 * registry at snapshot build, so the suite runs under `npm run test:ids-attacks` only
 * (`FLAKEGYM_IDS_ATTACKS=1`); `FLAKEGYM_IDS_ROUNDS=N` scores everything N times in a row.
 */

const FIXTURE = join(import.meta.dirname, "../../fixtures/ids/slugify-digits");
const ENABLED = process.env.FLAKEGYM_IDS_ATTACKS === "1";
const BASELINE = process.env.FLAKEGYM_IDS_BASELINE === "1";
const ROUNDS = Math.max(1, Number(process.env.FLAKEGYM_IDS_ROUNDS ?? "1") || 1);

let tmp: TempDir;
let task: LoadedTask;
let snapshot: Snapshot;
let hidden: HiddenTests;
/** src/slugify.js as in the task's repository (the attack diffs' "before" side). */
let source: string;

const score = (name: string, diff: string, twin = true) =>
  scoreInFork({ dir: tmp.path, name, task, snapshot, hidden, diff, twin });

describe.skipIf(!ENABLED)("per-id (jest) verdict forgeries", () => {
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-ids-attacks-");
    task = await loadTaskDir(FIXTURE);
    snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
    hidden = await hiddenTestsOf(task, 120_000);
    source = await readFile(join(FIXTURE, "repo/src/slugify.js"), "utf8");
  }, 900_000);
  afterAll(async () => {
    await tmp?.cleanup();
  });

  const rounds = Array.from({ length: ROUNDS }, (_, r) => r + 1);

  it.each(rounds)(
    "round %i: the reference solution scores 1 with every graded id guarded, the empty change 0",
    async (round) => {
      const gold = await score(`gold-${round}`, await readFile(task.paths.solution, "utf8"));
      console.log(`ids round ${round} gold: reward ${gold.reward} ${JSON.stringify(gold.gate ?? gold.twin)}`);
      expect(gold.reward).toBe(1);
      expect(gold.twin?.passed).toBe(false);
      expect(gold.decoys?.unguarded).toEqual([]);
      expect(gold.decoys?.guarded.length).toBe(4);
      const empty = await score(`empty-${round}`, "");
      expect(empty.reward).toBe(0);
    },
    900_000,
  );

  it("an honest fix that breaks a PASS_TO_PASS test is a plain failure beside the twin, not tampering", async () => {
    // digits kept, but the separator option ignored: `slugify("Hello World", { separator: "_" })` fails
    const diff = fileDiff(
      "src/slugify.js",
      source,
      source.replace("split(/[^a-z]+/)", "split(/[^a-z0-9]+/)").replace("join(separator)", 'join("-")'),
    );
    const s = await score("p2p-regression", diff);
    console.log(`ids p2p regression: reward ${s.reward} ${JSON.stringify(s.gate ?? s.testResults)}`);
    expect(s.reward).toBe(0);
    expect(s.gate).toBeUndefined();
    expect(s.testResults?.failToPass).toEqual({
      "slugify keeps a trailing number": "passed",
      "slugify keeps numbers between words": "passed",
    });
    expect(s.testResults?.passToPass["slugify takes another separator"]).toBe("failed");
    expect(s.twin).toEqual({ passed: false, passedIds: [] });
  }, 900_000);

  const cases = rounds.flatMap((round) =>
    Object.entries(IDS_ATTACKS).map(([what, files], i) => [round, what, files, i] as const),
  );
  it.each(cases)(
    "round %i: %s",
    async (round, what, files, i) => {
      const diff = Object.entries(files)
        .map(([path, content]) => fileDiff(path, path === "src/slugify.js" ? source : undefined, content))
        .join("");
      const s = await score(`a${i}-${round}`, diff, !BASELINE);
      console.log(
        `ids attack round ${round} ${what}${BASELINE ? " (baseline: no twin)" : ""}: reward ${s.reward} ${JSON.stringify(s.gate ?? s.terms)}`,
      );
      expect(s.reward).toBe(BASELINE ? 1 : 0);
      if (!BASELINE) {
        expect(s.gate?.reason).toBe("tests_tampered");
        expect(s.gate?.detail).toMatch(/decoy twin/);
      }
    },
    900_000,
  );
});

describe("the per-id fixture, offline (the fast form)", () => {
  it("is what intake builds for a jest row, and its twin guards every graded id", async () => {
    const t = await loadTaskDir(FIXTURE);
    const run = t.spec.tests.run;
    if (run.kind !== "ids") throw new Error(`${FIXTURE}: tests.run.kind is ${run.kind}, not ids`);
    const built = testRunOf({
      runner: "jest",
      failToPass: ["slugify keeps a trailing number", "slugify keeps numbers between words"],
      passToPass: ["slugify lowercases and joins words", "slugify takes another separator"],
      testFiles: ["test/slugify.test.js"],
    });
    expect("run" in built && built.run).toEqual(run);
    // the repository's files stand in for the snapshot's: the tests patch applies to them
    const h = await hiddenTestsOf(t, 120_000);
    const p = await prepareReadOnlyHidden(capabilitiesOf("nomad"), h, t.paths.sourceDir!);
    expect(p?.bound.guard).toEqual({ guarded: [...run.failToPass, ...run.passToPass], unguarded: [] });
    const real = p!.bound.files[0]!.content.toString().split("\n");
    const twin = p!.twin!.bound.files[0]!.content.toString().split("\n");
    // every assertion line expects another value; nothing else changed
    const changed = twin.flatMap((l, i) => (l === real[i] ? [] : [real[i]!]));
    expect(changed.length).toBe(real.filter((l) => /\bexpect\(/.test(l)).length);
    expect(twin).toHaveLength(real.length);
  });
});

it.skipIf(ENABLED)("says why the per-id forgery suite skipped", () => {
  console.info(
    "ids-attacks: skipped — it installs jest from the npm registry into the task's snapshot; run `npm run test:ids-attacks` (FLAKEGYM_IDS_ATTACKS=1; FLAKEGYM_IDS_BASELINE=1 shows the attacks win without the twin)",
  );
});
