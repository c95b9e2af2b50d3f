/**
 * Pure helpers over `git diff` text: split it per file, and drop the agent's changes to the hidden
 * test files before the real tests are applied (recording that it touched them).
 */

/** One file's section of a git diff, text kept verbatim. */
export interface FileDiff {
  /** Path before the change (`a/` side), or undefined for a new file. */
  readonly oldPath?: string;
  /** Path after the change (`b/` side), or undefined for a deleted file. */
  readonly newPath?: string;
  readonly text: string;
}

/**
 * Unquotes a path as git writes it (core.quotePath): a path with a special byte is written between
 * double quotes with C escapes (`\t`, `\n`, `\"`, `\\`, `\a`…) and every non-ASCII byte as a
 * three-digit octal escape (`"caf\303\251.txt"` is `café.txt`). An unquoted path is returned as is.
 */
export function unquoteGitPath(p: string): string {
  if (!p.startsWith('"')) return p;
  const body = p.slice(1, p.lastIndexOf('"'));
  const bytes: number[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      bytes.push(...enc.encode(c));
      continue;
    }
    const n = body[++i]!;
    if (/[0-7]/.test(n)) {
      const oct = body.slice(i, i + 3);
      bytes.push(Number.parseInt(oct, 8));
      i += 2;
    } else
      bytes.push(
        ({ n: 10, t: 9, r: 13, '"': 34, "\\": 92, a: 7, b: 8, f: 12, v: 11 } as Record<string, number>)[n] ??
          n.charCodeAt(0),
      );
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/**
 * The path of a `--- ` / `+++ ` line's value without its `a/` or `b/` prefix; null for
 * `/dev/null`. Git ends the line with a tab when an unquoted path holds a space; it is cut off.
 */
export function diffSidePath(p: string): string | null {
  const path = unquoteGitPath(p.split("\t")[0]!.trimEnd());
  if (path === "/dev/null") return null;
  return path.replace(/^[ab]\//, "");
}

/** Reads `a/x b/y` from a `diff --git` header (paths may be quoted). */
export function headerPaths(line: string): { a?: string; b?: string } {
  const rest = line.slice("diff --git ".length);
  const m = /^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$/.exec(rest);
  if (m)
    return { a: unquoteGitPath(m[1]!).replace(/^a\//, ""), b: unquoteGitPath(m[2]!).replace(/^b\//, "") };
  // unquoted paths with spaces: "a/<p> b/<p>" with the same <p>
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half)) {
    const a = rest.slice(0, half);
    const b = rest.slice(half + 1);
    return { a: a.replace(/^a\//, ""), b: b.replace(/^b\//, "") };
  }
  return {};
}

/** Splits a `git diff` into per-file sections. Text before the first header is dropped. */
export function splitDiff(diff: string): FileDiff[] {
  const out: FileDiff[] = [];
  const lines = diff.split("\n");
  let cur: { a?: string; b?: string; lines: string[] } | undefined;
  const flush = () => {
    if (!cur) return;
    let text = cur.lines.join("\n");
    if (!text.endsWith("\n")) text += "\n";
    let oldPath = cur.a;
    let newPath = cur.b;
    for (const l of cur.lines) {
      if (l.startsWith("--- ")) oldPath = diffSidePath(l.slice(4)) ?? undefined;
      if (l.startsWith("+++ ")) newPath = diffSidePath(l.slice(4)) ?? undefined;
      if (l.startsWith("new file mode")) oldPath = undefined;
      if (l.startsWith("deleted file mode")) newPath = undefined;
      if (l.startsWith("rename from ")) oldPath = unquoteGitPath(l.slice("rename from ".length));
      if (l.startsWith("rename to ")) newPath = unquoteGitPath(l.slice("rename to ".length));
      if (l.startsWith("@@")) break;
    }
    out.push({
      ...(oldPath !== undefined ? { oldPath } : {}),
      ...(newPath !== undefined ? { newPath } : {}),
      text,
    });
  };
  for (const line of lines) {
    if (line.startsWith("diff --git ")) {
      flush();
      cur = { ...headerPaths(line), lines: [line] };
    } else if (cur) {
      cur.lines.push(line);
    }
  }
  flush();
  // a trailing "" from the final newline becomes part of the last section; normalise it
  return out.map((f) => ({ ...f, text: f.text.replace(/\n+$/, "\n") }));
}

/** The paths a diff touches (old and new sides). */
export function touchedPaths(diff: string): string[] {
  const s = new Set<string>();
  for (const f of splitDiff(diff)) {
    if (f.oldPath) s.add(f.oldPath);
    if (f.newPath) s.add(f.newPath);
  }
  return [...s].sort();
}

export interface FilteredDiff {
  /** The diff without sections that touch a protected path. */
  readonly diff: string;
  /** Protected paths the agent's diff touched (its changes there were dropped). */
  readonly droppedPaths: string[];
  /** Paths kept. */
  readonly keptPaths: string[];
}

/**
 * Whether `path` takes the place of `hidden`: the same path, a path under it (the hidden file would
 * have to be a directory), one of its directories (a file where the hidden file's directory must
 * go), or a name made from it (`<hidden>.<suffix>`: where a tool puts its temp or backup copy). Pure.
 */
export const takesPlaceOf = (path: string, hidden: string): boolean =>
  path === hidden ||
  path.startsWith(`${hidden}/`) ||
  path.startsWith(`${hidden}.`) ||
  hidden.startsWith(`${path}/`);

/**
 * Removes every file section touching one of `protectedPaths` (the hidden test files) or taking
 * their place ({@link takesPlaceOf}), so the agent can neither edit the tests it is graded by nor
 * make their installation fail. Pure.
 */
export function dropPaths(diff: string, protectedPaths: readonly string[]): FilteredDiff {
  const protect = protectedPaths.map((p) => p.replace(/^\.\//, ""));
  const kept: FileDiff[] = [];
  const dropped = new Set<string>();
  for (const f of splitDiff(diff)) {
    const hit = [f.oldPath, f.newPath].filter(
      (p): p is string => p !== undefined && protect.some((h) => takesPlaceOf(p, h)),
    );
    if (hit.length) for (const p of hit) dropped.add(p);
    else kept.push(f);
  }
  return {
    diff: kept.map((f) => f.text).join(""),
    droppedPaths: [...dropped].sort(),
    keptPaths: [
      ...new Set(kept.flatMap((f) => [f.oldPath, f.newPath].filter((p): p is string => !!p))),
    ].sort(),
  };
}

/** One added line of a file in a diff: its 1-based line in the new file. */
export interface AddedLine {
  readonly line: number;
  readonly text: string;
}

/** The added lines of each file `diff` writes (removed and context lines skipped). Pure. */
export function addedLinesByFile(diff: string): { path: string; added: AddedLine[] }[] {
  return changedLinesByFile(diff).map(({ path, added }) => ({ path, added }));
}

/** The added lines of each file `diff` writes, and the text of the lines it removes there. Pure. */
export function changedLinesByFile(
  diff: string,
): { path: string; isNew: boolean; added: AddedLine[]; removed: string[] }[] {
  const out: { path: string; isNew: boolean; added: AddedLine[]; removed: string[] }[] = [];
  for (const f of splitDiff(diff)) {
    if (f.newPath === undefined) continue;
    let line = 0;
    let inHunk = false;
    const added: AddedLine[] = [];
    const removed: string[] = [];
    for (const l of f.text.split("\n")) {
      const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(l);
      if (hunk) {
        line = Number(hunk[1]);
        inHunk = true;
        continue;
      }
      // an added line may itself start with "++" (`++i;`): only the file header is skipped
      if (!inHunk) continue;
      if (l.startsWith("+")) added.push({ line: line++, text: l.slice(1) });
      else if (l.startsWith("-")) removed.push(l.slice(1));
      else if (l.startsWith(" ")) line++;
    }
    out.push({ path: f.newPath, isNew: f.oldPath === undefined, added, removed });
  }
  return out;
}

/**
 * What `diff` shows of each file it writes: the new side of its hunks (added and context lines, in
 * order), and whether that is the whole file (a new file). Pure.
 */
export function postImageByFile(diff: string): { path: string; text: string; whole: boolean }[] {
  return splitDiff(diff).flatMap((f) => {
    if (f.newPath === undefined) return [];
    const lines: string[] = [];
    let inHunk = false;
    for (const l of f.text.split("\n")) {
      if (l.startsWith("@@")) inHunk = true;
      else if (inHunk && (l.startsWith("+") || l.startsWith(" "))) lines.push(l.slice(1));
    }
    return [
      { path: f.newPath, text: lines.length ? `${lines.join("\n")}\n` : "", whole: f.oldPath === undefined },
    ];
  });
}
