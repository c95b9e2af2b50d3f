import { FlakegymError } from "../errors.js";
import { diffSidePath, headerPaths, unquoteGitPath } from "./diff.js";

/**
 * The one reader of unified diffs (git or plain): per-file changes and their hunks, read strictly
 * (the scripted policy's reference patch: counts must hold, a stray line is an error) or leniently
 * (the judge's reading of an agent's diff section: {@link hunksOf}, {@link applyFileDiff}).
 */

export interface HunkLine {
  readonly op: " " | "+" | "-";
  readonly text: string;
}

export interface Hunk {
  /** The `@@ -a,b +c,d @@` ranges as written (without the trailing function context). */
  readonly header: string;
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
  /** git's `new file mode 100755` / `new mode 100755`: the new side is executable. */
  readonly executable?: boolean;
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
  executable?: boolean;
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
  if (line.startsWith("new file mode"))
    return { added: true, ...(/ 100755$/.test(line) ? { executable: true } : {}) };
  if (/^new mode 100755$/.test(line)) return { executable: true };
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
    ...(d.executable && kind !== "delete" ? { executable: true } : {}),
  };
}

/** A hunk's `@@` line read: its ranges as written and as numbers. */
export interface HunkRanges {
  readonly header: string;
  readonly oldStart: number;
  readonly oldLines: number;
  readonly newStart: number;
  readonly newLines: number;
}

/** The ranges of an `@@ -a,b +c,d @@` line (a missing count is 1), or undefined. Pure. */
export function hunkHeader(line: string): HunkRanges | undefined {
  const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
  if (!m) return undefined;
  return {
    header: m[0],
    oldStart: Number(m[1]),
    oldLines: m[2] === undefined ? 1 : Number(m[2]),
    newStart: Number(m[3]),
    newLines: m[4] === undefined ? 1 : Number(m[4]),
  };
}

/** A hunk's body as read so far. */
interface HunkBody {
  readonly lines: HunkLine[];
  oldNoNewline: boolean;
  newNoNewline: boolean;
}

const emptyBody = (): HunkBody => ({ lines: [], oldNoNewline: false, newNoNewline: false });

/**
 * What one line of a hunk's body is: a line of a side (`git diff` writes an empty context line as
 * "" in some pipelines), the `\ No newline at end of file` marker, or neither (undefined). Pure.
 */
export function bodyLine(l: string): HunkLine | "no-newline" | undefined {
  if (l.startsWith("\\")) return "no-newline";
  const op = l[0] ?? " ";
  if (op === " " || op === "+" || op === "-") return { op, text: l.slice(1) };
  return undefined;
}

/** Adds a read body line to `b`; the marker ends the side(s) of the line before it. */
function addBodyLine(b: HunkBody, l: HunkLine | "no-newline"): void {
  if (l !== "no-newline") {
    b.lines.push(l);
    return;
  }
  const last = b.lines[b.lines.length - 1]?.op;
  if (last !== "+") b.oldNoNewline = true;
  if (last !== "-") b.newNoNewline = true;
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
  h: HunkRanges,
): { hunk: Hunk; next: number } {
  const body = emptyBody();
  let oldSeen = 0;
  let newSeen = 0;
  let i = start;
  while (i < lines.length && (oldSeen < h.oldLines || newSeen < h.newLines || lines[i]!.startsWith("\\"))) {
    const l = lines[i]!;
    i++;
    const entry = bodyLine(l);
    if (entry === undefined) throw new PatchParseError(`unexpected line in hunk: '${l.slice(0, 80)}'`, i);
    addBodyLine(body, entry);
    if (entry === "no-newline") continue;
    if (entry.op !== "+") oldSeen++;
    if (entry.op !== "-") newSeen++;
  }
  if (oldSeen !== h.oldLines || newSeen !== h.newLines) {
    throw new PatchParseError(
      `hunk '${headerLine}' is truncated (old ${oldSeen}/${h.oldLines}, new ${newSeen}/${h.newLines} lines)`,
      i,
    );
  }
  return { hunk: { ...h, ...body }, next: i };
}

/**
 * The hunks of one file's section of a diff (`FileDiff.text`), read leniently: a hunk runs to the
 * next `@@` line whatever its counts say, and a line that is not part of a hunk is skipped. Pure.
 */
export function hunksOf(fileText: string): Hunk[] {
  const read: { ranges: HunkRanges; body: HunkBody }[] = [];
  for (const l of fileText.replace(/\n$/, "").split("\n")) {
    const ranges = hunkHeader(l);
    if (ranges) {
      read.push({ ranges, body: emptyBody() });
      continue;
    }
    const cur = read.at(-1);
    const entry = cur ? bodyLine(l) : undefined;
    if (cur && entry !== undefined) addBodyLine(cur.body, entry);
  }
  return read.map(({ ranges, body }) => ({ ...ranges, ...body }));
}

/**
 * How {@link applyHunks} reads its input. Strict (the default): a hunk with no old lines inserts
 * after line `oldStart` (git's rule), a missing final newline follows the markers. Lenient (the
 * judge's reading of an agent's diff, {@link applyFileDiff}): a hunk starts at line `oldStart`
 * (0: the top) whatever its old count, a start past the end is a mismatch, and the result always
 * ends in a newline.
 */
export interface ApplyOptions {
  /** Names the file in errors. */
  readonly path?: string;
  /** Read as the judge reads an agent's diff (see above); default false. */
  readonly lenient?: boolean;
}

/** The 0-based index of the first old line `h` covers, as `applyHunks` reads it. Pure. */
export function hunkStartIndex(h: Pick<Hunk, "oldStart" | "oldLines">, lenient = false): number {
  if (lenient) return h.oldStart === 0 ? 0 : h.oldStart - 1;
  return h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
}

/** Applies a file's hunks to its old content (context must match). Throws `E_PATCH` naming the hunk. */
export function applyHunks(original: string, hunks: readonly Hunk[], opts: ApplyOptions = {}): string {
  const { path = "file", lenient = false } = opts;
  const endsWithNewline = original.endsWith("\n");
  const oldLines =
    original.length === 0 ? [] : (endsWithNewline ? original.slice(0, -1) : original).split("\n");
  const out: string[] = [];
  let pos = 0; // 0-based index into oldLines
  let newNoNewline = !endsWithNewline && original.length > 0;
  for (const h of hunks) {
    const start = hunkStartIndex(h, lenient);
    if (start < pos)
      throw new FlakegymError("E_PATCH", `${path}: hunks overlap or are out of order at -${h.oldStart}`);
    if (lenient && start > oldLines.length)
      throw new FlakegymError(
        "E_PATCH",
        `${path}: hunk -${h.oldStart} starts past the end of the file (${oldLines.length} lines)`,
      );
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
  return out.join("\n") + (newNoNewline && !lenient ? "" : "\n");
}

/**
 * The file after a diff section's hunks ({@link hunksOf}) are applied leniently to `original`
 * (undefined: a new file), or undefined when a context or removed line does not match it (the diff
 * is not of this text). Pure.
 */
export function applyFileDiff(original: string | undefined, fileText: string): string | undefined {
  try {
    return applyHunks(original ?? "", hunksOf(fileText), { lenient: true });
  } catch (e) {
    if (e instanceof FlakegymError && e.code === "E_PATCH") return undefined;
    throw e;
  }
}
