/**
 * Why a hidden test failed, in one line, from its captured output (score.json `testOutput`): for
 * report rows, trial logs and the viewer. Pure, no imports: the browser bundle uses it too.
 */

/** Most characters of a failure message shown in a report row. */
const MESSAGE_CHARS = 300;
/** Lines that say why (an assertion, an error), and, failing those, lines that say that it failed. */
const WHY = [/assert|expected|panicked|error|exception|mismatch|not equal/i, /fail/i];

/**
 * The line of a test's output that says why it failed: the first line that reads like an
 * assertion or error (and the next line when it continues it, e.g. `left:`/`right:`), else the
 * last line. Pure.
 */
export function failureMessage(output: string | undefined): string {
  const lines = (output ?? "")
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== "");
  if (lines.length === 0) return "no output captured";
  const at = WHY.map((re) => lines.findIndex((l) => re.test(l))).find((i) => i >= 0) ?? -1;
  const picked =
    at < 0 ? [lines.at(-1)!] : [lines[at]!, ...lines.slice(at + 1, at + 3).filter((l) => /^\s/.test(l))];
  const text = picked.map((l) => l.trim()).join(" ");
  return text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS - 1)}…` : text;
}
