import { FlakegymError } from "../errors.js";
import { diffSidePath, headerPaths, unquoteGitPath } from "../text/diff.js";

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

/** Parses a unified diff. Throws {@link PatchParseError} naming the line on malformed input. */
export function parseUnifiedDiff(patch: string): FilePatch[] {
  const lines = patch.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const files: FilePatch[] = [];
  let i = 0;
  type Draft = {
    oldPath: string | null | undefined;
    newPath: string | null | undefined;
    added: boolean;
    deleted: boolean;
    renamed: boolean;
    binary: boolean;
    hunks: Hunk[];
  };
  let cur: Draft | undefined;
  const flush = () => {
    if (!cur) return;
    const oldPath = cur.oldPath ?? null;
    const newPath = cur.newPath ?? null;
    const kind =
      cur.added || oldPath === null
        ? "add"
        : cur.deleted || newPath === null
          ? "delete"
          : cur.renamed || oldPath !== newPath
            ? "rename"
            : "modify";
    files.push({
      kind,
      oldPath: kind === "add" ? null : oldPath,
      newPath: kind === "delete" ? null : newPath,
      hunks: cur.hunks,
      binary: cur.binary,
    });
    cur = undefined;
  };
  const fresh = (): Draft => ({
    oldPath: undefined,
    newPath: undefined,
    added: false,
    deleted: false,
    renamed: false,
    binary: false,
    hunks: [],
  });
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.startsWith("diff --git ")) {
      flush();
      cur = fresh();
      const { a, b } = headerPaths(line);
      if (a !== undefined) cur.oldPath = a;
      if (b !== undefined) cur.newPath = b;
      i++;
    } else if (line.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) {
      if (!cur || cur.hunks.length > 0) {
        flush();
        cur = fresh();
      }
      cur.oldPath = diffSidePath(line.slice(4));
      cur.newPath = diffSidePath(lines[i + 1]!.slice(4));
      if (cur.oldPath === null) cur.added = true;
      if (cur.newPath === null) cur.deleted = true;
      i += 2;
    } else if (line.startsWith("@@")) {
      const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
      if (!m || !cur) throw new PatchParseError(`bad hunk header '${line}'`, i + 1);
      const oldLines = m[2] === undefined ? 1 : Number(m[2]);
      const newLines = m[4] === undefined ? 1 : Number(m[4]);
      const hunkLines: HunkLine[] = [];
      let oldSeen = 0;
      let newSeen = 0;
      let oldNoNewline = false;
      let newNoNewline = false;
      i++;
      while (i < lines.length && (oldSeen < oldLines || newSeen < newLines || lines[i]!.startsWith("\\"))) {
        const l = lines[i]!;
        if (l.startsWith("\\")) {
          const last = hunkLines[hunkLines.length - 1];
          if (last?.op === "-") oldNoNewline = true;
          else if (last?.op === "+") newNoNewline = true;
          else {
            oldNoNewline = true;
            newNoNewline = true;
          }
          i++;
          continue;
        }
        const op = l[0] ?? " ";
        if (op !== " " && op !== "+" && op !== "-") {
          // `git diff` writes an empty context line as "" in some pipelines
          if (l === "") {
            hunkLines.push({ op: " ", text: "" });
            oldSeen++;
            newSeen++;
            i++;
            continue;
          }
          throw new PatchParseError(`unexpected line in hunk: '${l.slice(0, 80)}'`, i + 1);
        }
        hunkLines.push({ op, text: l.slice(1) });
        if (op !== "+") oldSeen++;
        if (op !== "-") newSeen++;
        i++;
      }
      if (oldSeen !== oldLines || newSeen !== newLines) {
        throw new PatchParseError(
          `hunk '${line}' is truncated (old ${oldSeen}/${oldLines}, new ${newSeen}/${newLines} lines)`,
          i,
        );
      }
      cur.hunks.push({
        oldStart: Number(m[1]),
        oldLines,
        newStart: Number(m[3]),
        newLines,
        lines: hunkLines,
        oldNoNewline,
        newNoNewline,
      });
    } else if (cur) {
      if (line.startsWith("new file mode")) cur.added = true;
      else if (line.startsWith("deleted file mode")) cur.deleted = true;
      else if (line.startsWith("rename from ")) {
        cur.renamed = true;
        cur.oldPath = unquoteGitPath(line.slice("rename from ".length));
      } else if (line.startsWith("rename to ")) {
        cur.renamed = true;
        cur.newPath = unquoteGitPath(line.slice("rename to ".length));
      } else if (line.startsWith("Binary files ") || line === "GIT binary patch") cur.binary = true;
      i++;
    } else {
      i++; // preamble (commit message, stat lines)
    }
  }
  flush();
  return files;
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
