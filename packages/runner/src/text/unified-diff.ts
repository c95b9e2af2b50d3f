import { FlakegymError } from "../errors.js";
import { diffSidePath, headerPaths, unquoteGitPath } from "./diff.js";

/** A unified diff (git or plain), parsed into per-file changes. */

export interface HunkLine {
  readonly op: " " | "+" | "-";
  readonly text: string;
}

export interface Hunk {
  readonly oldStart: number;
  readonly oldLines: number;
  readonly newStart: number;
  readonly newLines: number;
  readonly lines: readonly HunkLine[];
  /** The old side's last line has no newline at end of file. */
  readonly oldNoNewline: boolean;
  /** The new side's last line has no newline at end of file. */
  readonly newNoNewline: boolean;
}

export interface FilePatch {
  readonly kind: "add" | "delete" | "modify" | "rename";
  /** null for an added file. */
  readonly oldPath: string | null;
  /** null for a deleted file. */
  readonly newPath: string | null;
  readonly hunks: readonly Hunk[];
  /** A binary change (git "Binary files … differ" or "GIT binary patch"). */
  readonly binary: boolean;
}

export class PatchParseError extends FlakegymError {
  override readonly name = "PatchParseError";
  constructor(message: string, line: number) {
    super("E_PATCH", `patch line ${line}: ${message}`, {
      hint: "the reference patch must be a unified diff",
    });
  }
}

/** A file's headers as read so far, before its kind is decided. */
export interface FileDraft {
  oldPath: string | null | undefined;
  newPath: string | null | undefined;
  added: boolean;
  deleted: boolean;
  renamed: boolean;
  binary: boolean;
  hunks: Hunk[];
}

const freshDraft = (): FileDraft => ({
  oldPath: undefined,
  newPath: undefined,
  added: false,
  deleted: false,
  renamed: false,
  binary: false,
  hunks: [],
});

/** The diff's lines, where the reader is, the files read and the one being read. */
interface DiffReader {
  readonly lines: readonly string[];
  i: number;
  readonly files: FilePatch[];
  cur: FileDraft | undefined;
}

/** Parses a unified diff. Throws {@link PatchParseError} naming the line on malformed input. */
export function parseUnifiedDiff(patch: string): FilePatch[] {
  const lines = patch.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const r: DiffReader = { lines, i: 0, files: [], cur: undefined };
  while (r.i < lines.length) readLine(r);
  finishFile(r);
  return r.files;
}

/** Reads the line at `r.i` by its kind, moving past it (and past a hunk's body). */
function readLine(r: DiffReader): void {
  const line = r.lines[r.i]!;
  if (line.startsWith("diff --git ")) {
    finishFile(r);
    const { a, b } = headerPaths(line);
    r.cur = {
      ...freshDraft(),
      ...(a === undefined ? {} : { oldPath: a }),
      ...(b === undefined ? {} : { newPath: b }),
    };
    r.i++;
  } else if (line.startsWith("--- ") && r.lines[r.i + 1]?.startsWith("+++ ")) {
    if (!r.cur || r.cur.hunks.length > 0) {
      finishFile(r);
      r.cur = freshDraft();
    }
    Object.assign(r.cur, sidePaths(line, r.lines[r.i + 1]!));
    r.i += 2;
  } else if (line.startsWith("@@")) {
    const header = hunkHeader(line);
    if (!header || !r.cur) throw new PatchParseError(`bad hunk header '${line}'`, r.i + 1);
    const { hunk, next } = readHunk(r.lines, r.i + 1, line, header);
    r.cur.hunks.push(hunk);
    r.i = next;
  } else {
    // before any file: preamble (commit message, stat lines)
    if (r.cur) Object.assign(r.cur, extendedHeader(line));
    r.i++;
  }
}

/** Ends the file being read, if any, adding it to the files read. */
function finishFile(r: DiffReader): void {
  if (r.cur) r.files.push(filePatchOf(r.cur));
  r.cur = undefined;
}

/** A file's paths from its `--- ` / `+++ ` lines; `/dev/null` on a side adds or deletes it. Pure. */
export function sidePaths(minus: string, plus: string): Partial<FileDraft> {
  const oldPath = diffSidePath(minus.slice(4));
  const newPath = diffSidePath(plus.slice(4));
  return {
    oldPath,
    newPath,
    ...(oldPath === null ? { added: true } : {}),
    ...(newPath === null ? { deleted: true } : {}),
  };
}

/** What one git extended header line (mode, rename, binary) says about its file; others say nothing. Pure. */
export function extendedHeader(line: string): Partial<FileDraft> {
  if (line.startsWith("new file mode")) return { added: true };
  if (line.startsWith("deleted file mode")) return { deleted: true };
  if (line.startsWith("rename from "))
    return { renamed: true, oldPath: unquoteGitPath(line.slice("rename from ".length)) };
  if (line.startsWith("rename to "))
    return { renamed: true, newPath: unquoteGitPath(line.slice("rename to ".length)) };
  if (line.startsWith("Binary files ") || line === "GIT binary patch") return { binary: true };
  return {};
}

/** A file's headers → its kind and paths (an added file has no old path, a deleted one no new path). Pure. */
export function filePatchOf(d: FileDraft): FilePatch {
  const oldPath = d.oldPath ?? null;
  const newPath = d.newPath ?? null;
  const kind =
    d.added || oldPath === null
      ? "add"
      : d.deleted || newPath === null
        ? "delete"
        : d.renamed || oldPath !== newPath
          ? "rename"
          : "modify";
  return {
    kind,
    oldPath: kind === "add" ? null : oldPath,
    newPath: kind === "delete" ? null : newPath,
    hunks: d.hunks,
    binary: d.binary,
  };
}

/** The ranges of an `@@ -a,b +c,d @@` line (a missing count is 1), or undefined. Pure. */
export function hunkHeader(
  line: string,
): { oldStart: number; oldLines: number; newStart: number; newLines: number } | undefined {
  const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
  if (!m) return undefined;
  return {
    oldStart: Number(m[1]),
    oldLines: m[2] === undefined ? 1 : Number(m[2]),
    newStart: Number(m[3]),
    newLines: m[4] === undefined ? 1 : Number(m[4]),
  };
}

/**
 * A hunk's body from `lines[start]` until both sides have their counts (and past any trailing
 * `\ No newline` marker), and the index after it. Throws {@link PatchParseError} on a line that is
 * not context, added or removed, and on a hunk the diff ends inside. Pure.
 */
export function readHunk(
  lines: readonly string[],
  start: number,
  headerLine: string,
  h: { oldStart: number; oldLines: number; newStart: number; newLines: number },
): { hunk: Hunk; next: number } {
  const body: HunkLine[] = [];
  let oldSeen = 0;
  let newSeen = 0;
  let oldNoNewline = false;
  let newNoNewline = false;
  let i = start;
  while (i < lines.length && (oldSeen < h.oldLines || newSeen < h.newLines || lines[i]!.startsWith("\\"))) {
    const l = lines[i]!;
    i++;
    if (l.startsWith("\\")) {
      const last = body[body.length - 1]?.op;
      if (last !== "+") oldNoNewline = true;
      if (last !== "-") newNoNewline = true;
      continue;
    }
    const entry = hunkLine(l, i);
    body.push(entry);
    if (entry.op !== "+") oldSeen++;
    if (entry.op !== "-") newSeen++;
  }
  if (oldSeen !== h.oldLines || newSeen !== h.newLines) {
    throw new PatchParseError(
      `hunk '${headerLine}' is truncated (old ${oldSeen}/${h.oldLines}, new ${newSeen}/${h.newLines} lines)`,
      i,
    );
  }
  return { hunk: { ...h, lines: body, oldNoNewline, newNoNewline }, next: i };
}

/** One line of a hunk's body (1-based `lineNo` for the error). Pure. */
function hunkLine(l: string, lineNo: number): HunkLine {
  // `git diff` writes an empty context line as "" in some pipelines
  const op = l[0] ?? " ";
  if (op === " " || op === "+" || op === "-") return { op, text: l.slice(1) };
  throw new PatchParseError(`unexpected line in hunk: '${l.slice(0, 80)}'`, lineNo);
}

/** Applies a file's hunks to its old content (strict: context must match). */
export function applyHunks(original: string, hunks: readonly Hunk[], path = "file"): string {
  const endsWithNewline = original.endsWith("\n");
  const oldLines =
    original.length === 0 ? [] : (endsWithNewline ? original.slice(0, -1) : original).split("\n");
  const out: string[] = [];
  let pos = 0; // 0-based index into oldLines
  let newNoNewline = !endsWithNewline && original.length > 0;
  for (const h of hunks) {
    const start = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    if (start < pos)
      throw new FlakegymError("E_PATCH", `${path}: hunks overlap or are out of order at -${h.oldStart}`);
    out.push(...oldLines.slice(pos, start));
    pos = start;
    for (const l of h.lines) {
      if (l.op === "+") {
        out.push(l.text);
        continue;
      }
      if (oldLines[pos] !== l.text) {
        throw new FlakegymError(
          "E_PATCH",
          `${path}: hunk -${h.oldStart} does not match line ${pos + 1} ('${(oldLines[pos] ?? "<eof>").slice(0, 60)}' ≠ '${l.text.slice(0, 60)}')`,
        );
      }
      if (l.op === " ") out.push(l.text);
      pos++;
    }
    if (pos >= oldLines.length) newNoNewline = h.newNoNewline;
  }
  out.push(...oldLines.slice(pos));
  if (out.length === 0) return "";
  return out.join("\n") + (newNoNewline ? "" : "\n");
}
