import { type LogParser, shortenPathParameter } from "../../tasks/swebench-log-parsers.js";
import { emittedStep, MAX_EMISSION_BYTES, type ParsedScoring } from "../script.js";
import type { ExternalSite } from "./canon.js";
import { opaqueTestsOf } from "./opaque.js";
import { type ExternalVerdict, externalVerdict, firstWord } from "./verdict.js";

/**
 * How the row's log parser keys an emitted node id, for graded ids that no node has exactly
 * (externalize/verdict.ts casesOf): requests', pylint's and pydicom's shortens an absolute-path
 * parameter (`[/tmp/x/tests/t.py]` → `[/t.py]`); the others take the first word. Pure.
 */
export function nodeKeyOf(parser: LogParser | undefined): ((node: string) => string) | undefined {
  return parser === "pytest-short-paths" ? (n) => shortenPathParameter(firstWord(n)) : undefined;
}

/**
 * The externalized verdict of run `run` of a suite from the script's `emitted.<run>.0` step (see
 * externalize/verdict.ts): a missing step, or one cut for length, fails every externalized test
 * of the run. Pure.
 */
export function externalRunVerdict(
  parsed: ParsedScoring,
  run: number,
  ids: readonly string[],
  sites: readonly ExternalSite[],
  /** How the row's log parser keys a node id (externalize/verdict.ts casesOf). */
  keyOf?: (node: string) => string,
): ExternalVerdict {
  if (!sites.length) return new Map();
  const step = parsed.steps.get(emittedStep(run, 0));
  if (step?.cut)
    return externalVerdict(ids, sites, {
      anomaly: `the run emitted ${step.outputBytes} bytes, more than the ${MAX_EMISSION_BYTES} kept`,
    });
  return externalVerdict(ids, sites, step?.output, keyOf);
}

/**
 * Graded ids of run `run` that emitted an opaque value at a literal assertion, with what it was
 * (externalize/opaque.ts); none when the emissions were cut for length. Pure.
 */
export function opaqueRunTests(
  parsed: ParsedScoring,
  run: number,
  ids: readonly string[],
  sites: readonly ExternalSite[],
  keyOf?: (node: string) => string,
): Record<string, string> {
  const step = parsed.steps.get(emittedStep(run, 0));
  return step?.cut ? {} : opaqueTestsOf(ids, sites, step?.output, keyOf);
}
