import { testBlocks } from "../../src/scoring/decoys/blocks.js";
import type { DecoyPlan } from "../../src/scoring/decoys/guard.js";
import type { ResultFormat } from "../../src/tasks/task-spec.js";

/**
 * The red-team attack py-real-value-from-context's rule, on any hidden file: code under test reads
 * the guarded file, finds a test's copies (the real one and its decoys: one literal differs), scores
 * each copy's changed literal by how much of it the rest of the file writes (whole, and its
 * character 3-grams) and takes the best-scored copy for the real one. Test-only: measures whether
 * decoy values give the real one away.
 */
const count = (text: string, piece: string) => text.split(piece).length - 1;

export const forgerScore = (literal: string, rest: string) =>
  1000 * count(rest, literal) +
  [...literal].slice(0, -2).reduce((n, _, i) => n + count(rest, literal.slice(i, i + 3)), 0);

/** The literal around offset `at` of `text`: the string literal holding it, else the word or number. */
function literalAt(text: string, strings: readonly { start: number; end: number }[], at: number): string {
  const str = strings.find((s) => s.start <= at && at < s.end);
  if (str) return text.slice(str.start, str.end);
  let s = at;
  let e = at;
  while (s > 0 && /[\w.]/.test(text[s - 1]!)) s--;
  while (e < text.length && /[\w.]/.test(text[e]!)) e++;
  return text.slice(s, e);
}

/** The test's name in a run id (`file::name`, `Name/sub`, or the title). */
const nameOf = (runId: string) =>
  runId.includes("::") ? runId.slice(runId.lastIndexOf("::") + 2) : runId.split("/")[0]!;

/** Whether the counting forger picks graded test `id`'s real copy, alone, out of its decoys. */
export function forgerTellsReal(
  format: ResultFormat,
  files: readonly { content: Buffer }[],
  plan: DecoyPlan,
  id: string,
): boolean {
  const run = plan.runIds[id];
  if (run === undefined) return false;
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
    const rest = copies.reduce((t, c) => t.replace(text.slice(c!.whole.start, c!.whole.end), ""), text);
    const scores = lits.map((l) => forgerScore(l, rest));
    const best = Math.max(...scores);
    return scores[0] === best && scores.filter((x) => x === best).length === 1;
  }
  return false;
}
