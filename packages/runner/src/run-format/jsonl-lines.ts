/**
 * The lines of a JSONL file a copy may pass on: every complete line that is JSON, in order. A torn
 * last line (a write cut short by a kill) and a complete line that is not JSON are skipped, each
 * named by file and line number with what to do, so one bad line never costs the rest or reaches
 * a trainer as it is. Pure.
 */

export interface SkippedLine {
  /** 1-based line number in the file. */
  readonly line: number;
  readonly why: string;
}

export interface JsonlLines {
  /** The good lines, each without its newline. */
  readonly lines: string[];
  readonly skipped: SkippedLine[];
}

export function jsonlLinesOf(text: string, file: string, resumeHint: string): JsonlLines {
  const parts = text.split("\n");
  // the piece after the last newline is a torn line when it holds anything
  const torn = parts.pop() ?? "";
  const lines: string[] = [];
  const skipped: SkippedLine[] = [];
  parts.forEach((l, i) => {
    if (l.trim() === "") return;
    try {
      JSON.parse(l);
      lines.push(l);
    } catch {
      skipped.push({
        line: i + 1,
        why: `${file}: line ${i + 1} is not JSON (the file was edited or corrupted); it is skipped: restore the line, or delete it`,
      });
    }
  });
  if (torn.trim() !== "")
    skipped.push({
      line: parts.length + 1,
      why: `${file}: line ${parts.length + 1} is torn (a write cut short, no newline); it is skipped: ${resumeHint}`,
    });
  return { lines, skipped };
}
