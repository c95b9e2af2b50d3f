import { type LogParser, shortenPathParameter } from "../../tasks/swebench-log-parsers.js";
import { emittedStep, MAX_EMISSION_BYTES, type ParsedScoring } from "../script.js";
import type { ExternalSite } from "./canon.js";
import { opaqueTestsOf } from "./opaque.js";
import { type ExternalVerdict, externalVerdict, firstWord, parseEmissions } from "./verdict.js";

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

/** How a gold-outside record (goldOutsideRunTests) begins in tests.run.opaque. */
export const GOLD_OUTSIDE = "a value its host comparison failed though the rewritten test passed";

/**
 * The hidden files a gold-outside record names (pytest ids' files): the test computes another value
 * once its file is rewritten, so the whole file stays as written — no emitter, no decoys — and
 * its graded tests are reported unguarded. Pure.
 */
export function asWrittenFiles(opaque: Readonly<Record<string, string>> | undefined): Set<string> {
  const out = new Set<string>();
  for (const [id, what] of Object.entries(opaque ?? {}))
    if (what.startsWith(GOLD_OUTSIDE) && id.includes("::")) out.add(id.slice(0, id.indexOf("::")));
  return out;
}

/**
 * `validate`'s probe of gold only: graded ids (keys: as graded) the runner passed while the host's
 * comparison failed them, on emissions believed as a whole — gold computes another value than
 * the literal once the file is rewritten (pylint-4661's test lints its own `__file__`, which now
 * holds the emitter: exit 30, not 0). Recorded like opaque tests (tests.run.opaque, its `what`):
 * later scorings keep that test as written, under decoys. An unbelievable stream picks nothing.
 * Pure.
 */
export function goldOutsideRunTests(
  parsed: ParsedScoring,
  run: number,
  /** Graded id → its id in the run (decoys' fresh ids), for those the runner passed. */
  passed: ReadonlyMap<string, string>,
  sites: readonly ExternalSite[],
  keyOf?: (node: string) => string,
): Record<string, string> {
  const step = parsed.steps.get(emittedStep(run, 0));
  if (!sites.length || !step || step.cut) return {};
  if ("anomaly" in parseEmissions(step.output, new Map(sites.map((s) => [s.site, s])))) return {};
  const outside = externalVerdict([...passed.values()], sites, step.output, keyOf);
  const out: Record<string, string> = {};
  for (const [id, runId] of passed) {
    const why = outside.get(runId);
    if (why !== undefined) out[id] = `${GOLD_OUTSIDE} (${why})`;
  }
  return out;
}
