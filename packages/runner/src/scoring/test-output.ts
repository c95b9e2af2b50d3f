import { runSecrets } from "../redact/redactor.js";
import type { DecoyPlan } from "./decoys/guard.js";
import type { HiddenTestVerdict } from "./scorer.js";
import type { ParsedScoring } from "./script.js";
import { testStep } from "./script.js";

/**
 * Why a hidden test failed, in its own words: the output of each graded test that failed, kept in
 * score.json `testOutput` (bounded, redacted). Output capture only — the verdicts are decided
 * elsewhere (scorer.ts) and nothing here changes them. A suite's output is shared by every test
 * (decoys included), so a test gets the lines about it, under its graded name; every other name
 * the run reported — the decoys' random names and the run ids of other tests — is replaced by
 * {@link OTHER_TEST}, so no excerpt tells which reported test was a decoy. Pure.
 */

/** Most bytes of output kept per test. */
export const TEST_OUTPUT_BYTES = 4096;
/** What another test's reported name (a decoy's included) becomes in an excerpt. */
export const OTHER_TEST = "<another test>";
/** Stands for the test's own name while the other names are replaced. */
const SELF = "\u0000self\u0000";
const NO_REPORT = "(no output: the test did not report — timed out, or its run was killed)";

/** Keeps the start and end of `s` within `max` UTF-8 bytes, marking the cut. Pure. */
export function clipBytes(s: string, max = TEST_OUTPUT_BYTES): string {
  const b = Buffer.from(s, "utf8");
  if (b.length <= max) return s;
  const mark = "\n[… cut …]\n";
  const half = Math.floor((max - Buffer.byteLength(mark)) / 2);
  // a cut inside a multi-byte character decodes to U+FFFD; drop those edge characters
  const head = b
    .subarray(0, half)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  const tail = b
    .subarray(b.length - half)
    .toString("utf8")
    .replace(/^\uFFFD/, "");
  return `${head}${mark}${tail}`;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `text` with each name of `names` replaced (longest first, so no name's prefix wins). Pure. */
function replaceNames(text: string, names: readonly string[], by: string): string {
  const ns = [...new Set(names)].filter((n) => n.length > 0).sort((a, b) => b.length - a.length);
  if (ns.length === 0) return text;
  return text.replace(new RegExp(ns.map(escapeRegExp).join("|"), "g"), by);
}

/**
 * The lines of a suite's shared output about `runId`: from the first line naming it through the
 * next line naming another reported test (at most 80 lines); the output's tail when no line names
 * it (a suite that did not compile reports nothing per test). Pure.
 */
export function excerptAbout(output: string, runId: string, others: readonly string[]): string {
  const lines = output.split("\n");
  const start = lines.findIndex((l) => l.includes(runId));
  if (start < 0) return lines.slice(-40).join("\n");
  const names = others.filter((o) => o !== runId && !runId.includes(o));
  const out = [lines[start]!];
  for (let i = start + 1; i < lines.length && out.length < 80; i++) {
    const l = lines[i]!;
    if (!l.includes(runId) && names.some((n) => l.includes(n))) break;
    out.push(l);
  }
  return out.join("\n");
}

/** The first run's verdict in which each test failed: test id → run index. Pure. */
function firstFailures(runs: readonly (readonly HiddenTestVerdict[])[]): Map<string, number> {
  const first = new Map<string, number>();
  runs.forEach((run, r) => {
    for (const v of run) if (!v.passed && v.kind !== "eval_cmd" && !first.has(v.id)) first.set(v.id, r);
  });
  return first;
}

/** Output of each failed per-id test command, from its own step. Pure. */
export function commandTestOutputs(
  parsed: ParsedScoring,
  runs: readonly (readonly HiddenTestVerdict[])[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [id, r] of firstFailures(runs)) {
    const i = runs[r]!.findIndex((v) => v.id === id);
    const step = parsed.steps.get(testStep(r, i));
    out[id] = finish(step ? step.output.trim() : NO_REPORT);
  }
  return out;
}

/** Output of each failed suite test: its excerpt of the suite's output, other names hidden. Pure. */
export function suiteTestOutputs(
  parsed: ParsedScoring,
  runs: readonly (readonly HiddenTestVerdict[])[],
  decoys: DecoyPlan = { runIds: {}, decoys: {} },
): Record<string, string> {
  const out: Record<string, string> = {};
  const ids = [...new Set(runs.flatMap((run) => run.map((v) => v.id)))];
  const reported = (id: string) => decoys.runIds[id] ?? id;
  const foreign = [...Object.keys(decoys.decoys), ...Object.values(decoys.runIds)];
  for (const [id, r] of firstFailures(runs)) {
    const step = parsed.steps.get(testStep(r, 0));
    if (!step) {
      out[id] = NO_REPORT;
      continue;
    }
    const runId = reported(id);
    const others = [...ids.filter((x) => x !== id).map(reported), ...foreign];
    const excerpt = excerptAbout(step.output.trim(), runId, others);
    const named = replaceNames(excerpt, [runId], SELF);
    out[id] = finish(replaceNames(named, others, OTHER_TEST).replaceAll(SELF, id));
  }
  return out;
}

const finish = (s: string) => clipBytes(runSecrets.text(s));
