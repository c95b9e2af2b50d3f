import type { ProgressEvent } from "../progress/events.js";

/**
 * What `flakegym validate` prints beside its verdicts: which policy each trajectory runs (gold,
 * empty, a cheat by name) on its progress lines, and — when the graded tests failed together
 * (a collection or import error, a broken install) — the first lines of that shared cause rather
 * than only the list of ids. Pure.
 */

/** The labels of validate's policies in trajectory order: gold, empty, then each cheat. */
export function validateLabels(cheats: readonly string[]): string[] {
  return ["gold", "empty", ...cheats.map((c) => `cheat ${c}`)];
}

/** The policy label of a trajectory id (`<task>-t<i>`), or undefined when it has no index. */
export function policyOfTrajectory(trajectoryId: string, labels: readonly string[]): string | undefined {
  const m = /-t(\d+)$/.exec(trajectoryId);
  return m && labels.length > 0 ? labels[Number(m[1]) % labels.length] : undefined;
}

/** A progress event whose trajectory is named with its policy (`django-1-t0 [gold]`). */
export function withPolicyLabel(e: ProgressEvent, labels: readonly string[]): ProgressEvent {
  if (e.type !== "trajectory" && e.type !== "retry") return e;
  const label = policyOfTrajectory(e.trajectoryId, labels);
  return label === undefined ? e : { ...e, trajectoryId: `${e.trajectoryId} [${label}]` };
}

/** Most ids listed before "… and N more". */
const MAX_IDS = 5;
/** Most lines of a shared cause shown. */
const MAX_LINES = 8;

/** `a, b, c, … and 61 more`. */
export function shortIdList(ids: readonly string[]): string {
  const shown = ids.slice(0, MAX_IDS).join(", ");
  return ids.length > MAX_IDS ? `${shown}, … and ${ids.length - MAX_IDS} more` : shown;
}

/**
 * The first lines of the output the failing tests share (two or more with the same captured
 * output: the run reported none of them, e.g. a collection error), from the first line that
 * reads like an error; undefined when they failed each in its own way. Pure.
 */
export function sharedCause(
  failing: readonly string[],
  testOutput: Readonly<Record<string, string>>,
): string[] | undefined {
  const counts = new Map<string, number>();
  for (const id of failing) {
    const out = testOutput[id];
    if (out !== undefined && out.trim() !== "") counts.set(out, (counts.get(out) ?? 0) + 1);
  }
  const [text, n] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? ["", 0];
  if (n < 2) return undefined;
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const start = lines.findIndex((l) =>
    /^E\s|error|Error|ERROR|Traceback|Interrupted|No module named|not found/.test(l),
  );
  return lines.slice(Math.max(0, start), Math.max(0, start) + MAX_LINES);
}
