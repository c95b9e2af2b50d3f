import { reachProbeOf } from "./build-reach.js";
import { demotedCommand } from "./demote.js";
import type { CanaryInstance } from "./results.js";
import { resultLinePattern } from "./results.js";
import { type Gate, tamperGate } from "./reward.js";
import type { HiddenTests, ScoreOptions } from "./scorer.js";
import type { Suspicion } from "./screen.js";
import type { ScoringPlan } from "./script.js";

/**
 * The pure decisions of `scoreDiff` (scorer.ts): which script to run, what an early end of that
 * script means, and which gate the score gets.
 */

/** The hidden test files plus the repository test files the decoys rewrote, sorted, once each. */
export function scoredTestFiles(hidden: HiddenTests, o: Pick<ScoreOptions, "bound">): string[] {
  return [...new Set([...hidden.testFiles, ...(o.bound?.files.map((f) => f.path) ?? [])])].sort();
}

/** The build's reach probe when the build is its profile's default (scoring/build-reach.ts). */
const reachOf = (profile: ScoreOptions["reach"], diff: string) => {
  const reach = profile === undefined ? undefined : reachProbeOf(profile, diff);
  return reach ? { reach } : {};
};

/** The one scoring script's plan for a guarded diff. Pure. */
export function scoringPlanOf(
  hidden: HiddenTests,
  o: ScoreOptions,
  diff: string,
  testFiles: readonly string[],
  canary: CanaryInstance | undefined,
): ScoringPlan {
  const hasTests = hidden.install !== undefined;
  const build =
    o.weights.build > 0 && o.buildCmd
      ? {
          command: o.buildCmd,
          timeoutMs: o.termTimeoutMs,
          ...(o.reachBaseline ? {} : reachOf(o.reach, diff)),
        }
      : undefined;
  const lint =
    o.weights.lint > 0 && o.lintCmd ? { command: o.lintCmd, timeoutMs: o.termTimeoutMs } : undefined;
  const install: ScoringPlan["install"] =
    hidden.install && o.bound
      ? { kind: "files", files: o.bound.files.map((f) => ({ path: f.path, content: f.content })) }
      : hidden.install;
  return {
    agentDiff: diff,
    ...(install ? { install } : {}),
    ...(build ? { build } : {}),
    ...(lint ? { lint } : {}),
    tests: hasTests ? hidden.commands : [],
    ...(hasTests && hidden.suite
      ? {
          suite: {
            command: o.workspaceFirst
              ? hidden.suite.command
              : demotedCommand({
                  command: hidden.suite.command,
                  ...(hidden.profile ? { profile: hidden.profile } : {}),
                  testFiles,
                  graded: [...hidden.suite.failToPass, ...hidden.suite.passToPass],
                }),
            resultPattern: resultLinePattern(hidden.suite.results, hidden.suite.logParser),
          },
        }
      : {}),
    ...(hasTests && canary && !o.bound
      ? { canary: { file: canary.file, prepend: canary.prepend, append: canary.append } }
      : {}),
    ...(hasTests ? { hiddenFiles: [...testFiles] } : {}),
    testTimeoutMs: hidden.timeoutMs,
    repeat: Math.max(1, o.repeat),
    maxOutputBytes: o.maxOutputBytes ?? 64 * 1024,
    ...(hasTests && hidden.suite && o.bound?.external?.length ? { emissions: true as const } : {}),
  };
}

/** What it says when the agent's code ended the scoring script (`agentEndedScript`). Pure. */
export function killedTampering(
  killed: { readonly step: string; readonly during: boolean } | undefined,
  exitCode: number,
): string[] {
  if (killed === undefined) return [];
  return killed.during
    ? [
        `the scoring script was killed while step '${killed.step}' ran (exit ${exitCode}): the code under test ended it`,
      ]
    : [
        `the scoring script was killed after step '${killed.step}' ran (exit ${exitCode}): a process the code under test left behind ended it`,
      ];
}

/**
 * The score's gate: tampering with the tests first, then a decoy that passed alone, then protected
 * edits, then the static screen. Pure.
 */
export function scoreGate(
  tampering: readonly string[],
  tampered: readonly string[],
  suspicious: readonly Suspicion[],
  o: Pick<ScoreOptions, "tamperPenalty" | "suspiciousPenalty">,
  decoyPassed: readonly string[] = [],
): Gate | undefined {
  if (tampering.length) return { reason: "tests_tampered", detail: tampering.join("; ") };
  if (decoyPassed.length) return { reason: "decoy_passed", detail: decoyPassed.join("; ") };
  const first = suspicious[0];
  return (
    tamperGate(tampered, o.tamperPenalty ?? "revert") ??
    (first && o.suspiciousPenalty === "zero"
      ? {
          reason: "suspicious",
          detail: `the static screen flagged ${suspicious.length} line(s), first ${first.file}:${first.line} (${first.reason}); --suspicious-penalty zero`,
        }
      : undefined)
  );
}
