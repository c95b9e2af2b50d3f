import { testBlocks } from "../../../../packages/runner/src/scoring/decoys/blocks.js";
import type { DecoyPlan } from "../../../../packages/runner/src/scoring/decoys/guard.js";
import type { ResultFormat } from "../../../../packages/runner/src/tasks/task-spec.js";

/**
 * The red team's decoy oracle (issue 42), as code under test would run it from the workspace: it
 * reads the guarded hidden file, finds a graded test's copies (the real one and its decoys differ
 * in one literal) and picks the real copy without solving the task, by
 * - **mention**: the copy whose changed value the prompt or the repository's source writes most
 *   (an issue text stating `format(5400000)` returns `"1h30m"`);
 * - **custom exception**: the one copy expecting a class that is not a language built-in (decoys
 *   once drew only built-ins);
 * - **nearest inversion**: the copy from which the others are nearest (decoys once were the
 *   nearest values to the real one, so the real one sat at their centre).
 * It answers the copy's name, or undefined when no rule singles one out.
 */

const BUILT_IN_ERRORS = new Set([
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "URIError",
  "EvalError",
  "AggregateError",
  "ZeroDivisionError",
  "AttributeError",
  "IndexError",
  "RuntimeError",
  "ValueError",
  "KeyError",
  "LookupError",
  "ArithmeticError",
  "OverflowError",
  "NotImplementedError",
  "OSError",
  "Exception",
]);

const count = (text: string, piece: string) => (piece ? text.split(piece).length - 1 : 0);

/** A literal's value as prose writes it (a string's text between its quotes). */
const spelled = (lit: string) => lit.replace(/^(?:[rbuRBU]{0,2}|L|u8|b)(["'`])([\s\S]*)\1$/, "$2");

/** The literal (string, word or number) around offset `at`. */
function literalAt(text: string, strings: readonly { start: number; end: number }[], at: number): string {
  const str = strings.find((s) => s.start <= at && at < s.end);
  if (str) return text.slice(str.start, str.end);
  let s = at;
  let e = at;
  while (s > 0 && /[\w.]/.test(text[s - 1]!)) s--;
  while (e < text.length && /[\w.]/.test(text[e]!)) e++;
  return text.slice(s, e);
}

/** Edit distance, or numeric distance for two numbers. */
function distance(a: string, b: string): number {
  const x = Number(a.replaceAll("_", ""));
  const y = Number(b.replaceAll("_", ""));
  if (a !== "" && b !== "" && Number.isFinite(x) && Number.isFinite(y)) return Math.abs(x - y);
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const t = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = t;
    }
  }
  return d[b.length]!;
}

/** The index of the one strictly best score, else undefined. */
function unique(scores: readonly number[], best: "max" | "min"): number | undefined {
  const b = best === "max" ? Math.max(...scores) : Math.min(...scores);
  return scores.filter((s) => s === b).length === 1 ? scores.indexOf(b) : undefined;
}

/** Which rule picks which copy of the changed literals `lits` (index into them), if any. */
export function pickReal(
  lits: readonly string[],
  readable: string,
): { rule: string; index: number } | undefined {
  const mentions = lits.map((l) => count(readable, spelled(l)));
  const m = unique(mentions, "max");
  if (m !== undefined && mentions[m]! > 0) return { rule: "mention", index: m };
  const names = lits.map((l) => spelled(l).split(".").at(-1)!);
  if (names.every((n) => /^[A-Z]\w*(Error|Exception)$/.test(n))) {
    const custom = names.map((n) => (BUILT_IN_ERRORS.has(n) ? 0 : 1));
    const c = unique(custom, "max");
    if (c !== undefined && custom[c] === 1) return { rule: "custom exception", index: c };
  }
  const centre = lits.map((a) => lits.reduce((s, b) => s + distance(spelled(a), spelled(b)), 0));
  const n = unique(centre, "min");
  return n === undefined ? undefined : { rule: "nearest inversion", index: n };
}

/** The test's name in a run id (`file::name`, `Name/sub`, or the title). */
const nameOf = (runId: string) =>
  runId.includes("::") ? runId.slice(runId.lastIndexOf("::") + 2) : runId.split("/")[0]!;

/**
 * Whether the oracle picks graded test `id`'s real copy out of its decoys in the guarded `files`,
 * reading `readable` (the prompt and the repository's source, what the agent can read).
 */
export function oracleTellsReal(
  format: ResultFormat,
  files: readonly { content: Buffer }[],
  plan: DecoyPlan,
  id: string,
  readable: string,
): string | undefined {
  const run = plan.runIds[id];
  if (run === undefined) return undefined;
  const names = [
    nameOf(run),
    ...Object.keys(plan.decoys)
      .filter((d) => plan.decoys[d] === id)
      .map(nameOf),
  ];
  for (const f of files) {
    const text = f.content.toString("utf8");
    const { blocks, lexed } = testBlocks(format, text);
    const copies = names.map((n) => blocks.find((b) => b.name === n));
    if (names.length < 2 || copies.some((c) => c === undefined)) continue;
    const bodies = copies.map((c) => text.slice(c!.body.start, c!.body.end));
    let a = 0;
    while (a < bodies[0]!.length && bodies.every((b) => b[a] === bodies[0]![a])) a++;
    const lits = copies.map((c) => literalAt(text, lexed.strings, c!.body.start + a));
    const pick = pickReal(lits, readable);
    return pick?.index === 0 ? pick.rule : undefined;
  }
  return undefined;
}
