import { match } from "ts-pattern";
import type { TrajectoryResult } from "../run-format/schema.js";
import { type Hackability, hackabilityOf, hackabilityReasons, type ScoringPlace } from "./hackability.js";
import type { RunSummary } from "./summary.js";
import { sharedCause, shortIdList } from "./validate-lines.js";

/**
 * `flakegym validate`: a task earns its catalog place when the `gold` policy (the reference
 * solution driven through Cline) scores 1, the `empty` policy scores 0, every cheat (a scripted
 * plan in the task's `cheats/` that attacks the scorer instead of solving the task) scores 0, and
 * no hidden test flips between repeated runs. Pure verdicts over a finished validation run.
 */

export type Verdict = "pass" | "fail" | "skip";

export interface TaskVerdict {
  readonly taskId: string;
  readonly verdict: Verdict;
  readonly gold: number | null;
  readonly empty: number | null;
  /** Cheats that scored 0, of `cheatsRun` (null: the task has none or did not run). */
  readonly cheatsHeld: number | null;
  readonly cheatsRun: number;
  readonly flaky: readonly string[];
  readonly reasons: readonly string[];
  /** Which defences applied and which graded tests have decoys (from gold's score). */
  readonly hackability?: Hackability;
}

/** How validate judges hackability: where scoring ran, and whether unguarded tests are accepted. */
export interface HackabilityPolicy extends ScoringPlace {
  readonly allowUnguarded: boolean;
}

/** Snapshot error codes that mean "this machine cannot reach what the task needs". */
const NETWORK_CODES = new Set(["E_NETWORK_REQUIRED"]);

/** One cheat of a task and its result (undefined: it did not run). */
export interface CheatResult {
  readonly name: string;
  readonly result: TrajectoryResult | undefined;
}

/** Why a cheat failed to hold at 0, or undefined when it scored 0. Pure. */
export function cheatReason(c: CheatResult): string | undefined {
  const r = c.result;
  if (!r) return `cheat ${c.name}: did not run`;
  if (r.reward === null) return `cheat ${c.name}: no reward (${r.outcome.kind}: ${r.outcome.detail})`;
  if (r.reward === 0) return undefined;
  const tests = r.score?.terms.find((t) => t.name === "tests")?.detail?.replace(/\n/g, "; ");
  return `cheat ${c.name}: reward ${r.reward}, expected 0 — the scorer was fooled${tests ? ` (${tests})` : ""}`;
}

export function verdictFor(
  taskId: string,
  summary: RunSummary,
  gold: TrajectoryResult | undefined,
  empty: TrajectoryResult | undefined,
  cheats: readonly CheatResult[] = [],
  policy: HackabilityPolicy = { bindsHiddenReadOnly: true, root: true, allowUnguarded: false },
): TaskVerdict {
  const t = summary.tasks.find((x) => x.taskId === taskId);
  if (t?.error && NETWORK_CODES.has(t.error.code)) {
    return {
      taskId,
      verdict: "skip",
      gold: null,
      empty: null,
      cheatsHeld: null,
      cheatsRun: 0,
      flaky: [],
      reasons: [`skipped: needs network, which this machine does not have (${t.error.message})`],
    };
  }
  const reasons: string[] = [];
  if (t?.error) reasons.push(`task failed [${t.error.code}]: ${t.error.message}`);
  const check = (name: "gold" | "empty", r: TrajectoryResult | undefined, want: number) => {
    if (!r) {
      if (!t?.error) reasons.push(`${name}: did not run`);
      return;
    }
    if (r.reward === null) {
      reasons.push(`${name}: ${r.outcome.kind}: ${r.outcome.detail}`);
      return;
    }
    if (r.reward !== want) {
      const why = match(name)
        .with("gold", () => "the reference solution does not pass the hidden tests through Cline")
        .with("empty", () => "the hidden tests pass without any change (they do not test the task)")
        .exhaustive();
      reasons.push(
        `${name}: reward ${r.reward}, expected ${want} — ${why}${r.score?.gate ? ` (${r.score.gate.detail})` : ""}`,
      );
      const failing = r.score?.testResults
        ? [
            ...Object.entries(r.score.testResults.failToPass),
            ...Object.entries(r.score.testResults.passToPass),
          ]
            .filter(([, s]) => (want === 1 ? s !== "passed" : false))
            .map(([id]) => id)
        : [];
      if (failing.length) reasons.push(`${name}: failing (${failing.length}): ${shortIdList(failing)}`);
      const cause = sharedCause(failing, r.score?.testOutput ?? {});
      if (cause?.length)
        reasons.push(
          `${name}: the failing tests share one output (score.json testOutput); it begins:`,
          ...cause.map((l) => `  ${l}`),
        );
    }
  };
  check("gold", gold, 1);
  check("empty", empty, 0);
  const cheatReasons = cheats.map(cheatReason);
  for (const r of cheatReasons)
    if (r !== undefined && !(t?.error && r.endsWith("did not run"))) reasons.push(r);
  const flaky = [...new Set([...(gold?.score?.flaky ?? []), ...(empty?.score?.flaky ?? [])])].sort();
  if (flaky.length) reasons.push(`flaky tests (results differ between repeated runs): ${flaky.join(", ")}`);
  const hackability = hackabilityOf(gold, policy);
  reasons.push(...hackabilityReasons(hackability, policy.allowUnguarded));
  return {
    taskId,
    verdict: reasons.length ? "fail" : "pass",
    gold: gold?.reward ?? null,
    empty: empty?.reward ?? null,
    cheatsHeld: cheats.length && !t?.error ? cheatReasons.filter((r) => r === undefined).length : null,
    cheatsRun: cheats.length,
    flaky,
    reasons,
    ...(hackability ? { hackability } : {}),
  };
}

export function renderVerdicts(vs: readonly TaskVerdict[]): string[] {
  const fmt = (x: number | null) => (x === null ? "-" : x.toFixed(2));
  const rows = vs.map((v) => ({
    task: v.taskId,
    gold: fmt(v.gold),
    empty: fmt(v.empty),
    cheats: v.cheatsHeld === null ? "-" : `${v.cheatsHeld}/${v.cheatsRun}`,
    flaky: String(v.flaky.length),
    guarded: v.hackability
      ? `${v.hackability.guarded}/${v.hackability.graded}${v.hackability.externalized ? ` (${v.hackability.externalized} externalized)` : ""}`
      : "-",
    result: v.verdict.toUpperCase(),
  }));
  const cols = ["task", "gold", "empty", "cheats", "flaky", "guarded", "result"] as const;
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const out = [line(cols.map((c) => c.toUpperCase()))];
  vs.forEach((v, i) => {
    out.push(line(cols.map((c) => rows[i]![c])));
    for (const r of v.reasons) out.push(`    ${r}`);
    if (v.hackability) out.push(`    defences: ${v.hackability.defences.join("; ")}`);
  });
  const n = (k: Verdict) => vs.filter((v) => v.verdict === k).length;
  out.push(`${n("pass")} passed, ${n("fail")} failed, ${n("skip")} skipped`);
  return out;
}
