import { type FileDiff, splitDiff } from "../text/diff.js";
import { applyFileDiff, type Hunk, type HunkLine, hunksOf } from "../text/unified-diff.js";
import { type Lang, type LexOptions, lex } from "./decoys/scan.js";
import {
  addNames,
  addPathNames,
  createNamer,
  extOf,
  type KnownNames,
  knownIn,
  type Namer,
  showNames,
  showPath,
  tokens,
} from "./new-names.js";

/**
 * The judge's code reading of a diff: what is left when nothing in it can be prose addressed to a
 * reader. Comments and docstrings go, every string literal becomes a placeholder of its length
 * class, and a file that is not code (docs, data, markdown, unknown types) is reduced to its path
 * and line counts. The judge is asked once on the diff as written and once on this reading, and
 * its term is the lower answer (scoring/judge-readings.ts): an instruction that lives only in
 * prose, a string, a data file or its name is not in the second reading, so it cannot raise the
 * minimum. Names are code and can spell words too: every name, number and path part the change
 * introduces that the task's snapshot does not have is shown as a placeholder (`n1`, `k1`,
 * scoring/new-names.ts); the snapshot's own names stay, so the judge still sees what changes. Lexed: Python, JS/TS, Rust, Go, C/C++, the C family beyond C (Java, C#, Kotlin,
 * Swift, Scala, Dart, Groovy) and `#`-comment languages (shell, Ruby, Perl, R, Julia, Elixir, …);
 * others with a known comment syntax lose their comment lines only.
 *
 * Files are read whole — the original (the task's clean snapshot) with the diff's hunks applied —
 * so a hunk that starts inside a docstring or block comment is lexed in the right state. Pure: the
 * originals come in as data.
 */

/** How a file is read: lexed (five languages), comment lines dropped (others with a known comment syntax), or not shown. */
export type FileReading =
  | { readonly kind: "lexed"; readonly lang: Lang; readonly opts?: LexOptions }
  | { readonly kind: "comment-lines"; readonly markers: readonly string[] }
  | { readonly kind: "not-code" };

const LEXED: Readonly<Record<string, Lang>> = {
  py: "python",
  pyi: "python",
  js: "js",
  mjs: "js",
  cjs: "js",
  jsx: "js",
  ts: "js",
  tsx: "js",
  mts: "js",
  cts: "js",
  rs: "rust",
  go: "go",
  c: "c",
  h: "c",
  cc: "c",
  cpp: "c",
  cxx: "c",
  hpp: "c",
  hh: "c",
  hxx: "c",
};

/**
 * Lexed as `c` with what they add (block comments taken as nesting: where a language does not nest
 * them, more is taken out, never less), and `#`-comment languages lexed as Python (`#` comments,
 * `'`/`"`/triple-quoted strings; a heredoc's lines are not a literal to it).
 */
const LEXED_AS: Readonly<Record<string, { lang: Lang; opts?: LexOptions }>> = {
  ...Object.fromEntries(
    ["java", "kt", "kts", "scala", "swift", "dart", "groovy"].map((e) => [
      e,
      { lang: "c" as const, opts: { tripleQuotes: true, nestedComments: true } },
    ]),
  ),
  cs: { lang: "c", opts: { tripleQuotes: true, verbatim: true, nestedComments: true } },
  ...Object.fromEntries(
    ["sh", "bash", "zsh", "rb", "pl", "pm", "r", "jl", "ex", "exs", "nim", "cr", "ps1"].map((e) => [
      e,
      { lang: "python" as const },
    ]),
  ),
};

const C_LIKE = ["//", "/*", "*"];
const COMMENT_LINES: Readonly<Record<string, readonly string[]>> = {
  ...Object.fromEntries(["php", "zig", "m", "mm"].map((e) => [e, C_LIKE])),
  ...Object.fromEntries(["lua", "sql", "hs"].map((e) => [e, ["--"]])),
  ...Object.fromEntries(["lisp", "clj", "cljs", "el", "scm", "rkt"].map((e) => [e, [";"]])),
  ...Object.fromEntries(["erl", "hrl"].map((e) => [e, ["%"]])),
};

/** How `path` is read, by its extension. Pure. */
export function fileReadingOf(path: string): FileReading {
  const ext = extOf(path);
  const lang = LEXED[ext];
  if (lang) return { kind: "lexed", lang };
  const as = LEXED_AS[ext];
  if (as) return { kind: "lexed", lang: as.lang, ...(as.opts ? { opts: as.opts } : {}) };
  const markers = COMMENT_LINES[ext];
  if (markers) return { kind: "comment-lines", markers };
  return { kind: "not-code" };
}

/** A string literal's stand-in: its length class, never its text. Pure. */
export function stringPlaceholder(length: number): string {
  const cls =
    length <= 2 ? "empty" : length <= 10 ? "≤8" : length <= 34 ? "≤32" : length <= 130 ? "≤128" : ">128";
  return `"⟨string ${cls}⟩"`;
}

/** How names are shown: through `namer`, as the language of `ext` reads them. */
export interface NameShowing {
  readonly namer: Namer;
  readonly ext: string;
}

/**
 * `text` as `lang` with comments removed and every string literal replaced by its placeholder;
 * the line breaks inside a removed literal are kept, so line N stays line N. `names`: every name
 * and number shown through its namer (absent: as written). Pure but for the namer's table.
 */
export function stripToCode(text: string, lang: Lang, opts: LexOptions = {}, names?: NameShowing): string {
  const l = lex(text, lang, opts);
  const starts = new Map(l.strings.map((s) => [s.start, s.end]));
  const toks = names ? tokens(text, (i) => l.code[i] === 1, lang === "js") : undefined;
  let tok = toks?.next();
  let out = "";
  let i = 0;
  while (i < text.length) {
    if (names && tok && !tok.done && tok.value.start === i) {
      out += names.namer.show(text.slice(i, tok.value.end), tok.value.number, names.ext);
      i = tok.value.end;
      tok = toks!.next();
      continue;
    }
    const end = starts.get(i);
    if (end !== undefined) {
      out += stringPlaceholder(end - i) + "\n".repeat(newlines(text, i, end));
      i = end;
    } else {
      const ch = text[i]!;
      if (l.code[i] === 1 || ch === "\n") out += ch;
      i++;
    }
  }
  return out;
}

const newlines = (text: string, start: number, end: number) => {
  let n = 0;
  for (let i = start; i < end; i++) if (text[i] === "\n") n++;
  return n;
};

/** A line whose first non-blank text is a comment marker becomes empty. Pure. */
export function dropCommentLines(text: string, markers: readonly string[]): string {
  return text
    .split("\n")
    .map((line) => (markers.some((m) => line.trimStart().startsWith(m)) ? "" : line))
    .join("\n");
}

/** Counts of a file section's added and removed lines. */
function lineCounts(f: FileDiff): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const h of hunksOf(f.text))
    for (const l of h.lines) {
      if (l.op === "+") added++;
      else if (l.op === "-") removed++;
    }
  return { added, removed };
}

const MODE = /^(?:new file mode|deleted file mode|old mode|new mode) [0-7]{6}$/;

/**
 * The section's header as the code reading shows it: git's lines rebuilt with the paths shown
 * through the reading's names (a new file or directory name is a placeholder), its mode lines
 * kept; index hashes, similarity percentages and a binary patch's data are not shown.
 */
function headerOf(f: FileDiff, r: ReadingNames): string {
  const shown = (p: string | undefined) => (p === undefined ? undefined : showPath(p, r.known, r.namer));
  const [a, b] = [shown(f.oldPath), shown(f.newPath)];
  const lines = f.text.split("\n");
  const first = lines.findIndex((l) => l.startsWith("@@"));
  const head = first < 0 ? lines : lines.slice(0, first);
  return [
    `diff --git a/${a ?? b} b/${b ?? a}`,
    ...head.filter((l) => MODE.test(l)),
    ...(a !== undefined && b !== undefined && a !== b ? [`rename from ${a}`, `rename to ${b}`] : []),
    ...(head.some((l) => l.startsWith("Binary files ")) ? ["Binary files differ"] : []),
    ...(first < 0
      ? []
      : [
          `--- ${a === undefined ? "/dev/null" : `a/${a}`}`,
          `+++ ${b === undefined ? "/dev/null" : `b/${b}`}`,
        ]),
  ].join("\n");
}

function summaryOnly(f: FileDiff, header: string, why: string): string {
  const { added, removed } = lineCounts(f);
  return `${header}\n[${why}: ${added} line(s) added, ${removed} removed; text not shown]\n`;
}

/** Extensions a file that is not code is named by; any other is not shown (an extension can spell a word). */
const NOT_CODE_KINDS = new Set(
  "md markdown rst txt adoc json jsonl yaml yml toml ini cfg conf xml html htm css csv tsv lock svg png jpg jpeg gif ico pdf".split(
    " ",
  ),
);

/** A file that is not code: its kind and counts; its path can carry words too, so it is not shown. */
function notCode(f: FileDiff, path: string): string {
  const { added, removed } = lineCounts(f);
  const ext = extOf(path);
  const what = f.oldPath === undefined ? "new" : f.newPath === undefined ? "deleted" : "changed";
  return `[a ${what} file that is not code${NOT_CODE_KINDS.has(ext) ? ` (.${ext})` : ""}: ${added} line(s) added, ${removed} removed; path and text not shown]\n`;
}

/**
 * One hunk's lines read from the stripped whole files (`newLines` for context and added lines,
 * `oldLines` for removed ones); a line that held only a comment is dropped; the `@@` line keeps
 * its ranges and loses its trailing function context.
 */
function readHunk(h: Hunk, oldLines: readonly string[], newLines: readonly string[]): string[] {
  const out = [h.header];
  let o = h.oldStart === 0 ? 0 : h.oldStart - 1;
  let n = h.newStart === 0 ? 0 : h.newStart - 1;
  for (const { op: p, text } of h.lines) {
    const stripped = (p === "-" ? oldLines[o] : newLines[n]) ?? "";
    if (p !== "+") o++;
    if (p !== "-") n++;
    if (stripped.trim() === "" && text.trim() !== "") continue;
    out.push(`${p}${stripped.trimEnd()}`);
  }
  return out;
}

/** The names a reading shows as written (`known`) and its placeholders for the rest. */
interface ReadingNames {
  readonly known: KnownNames;
  readonly namer: Namer;
}

/** One file's section of the code reading. `original`: the file before the change (undefined: not read). */
function readFile(f: FileDiff, original: string | undefined, r: ReadingNames): string {
  const path = f.newPath ?? f.oldPath ?? "";
  const reading = fileReadingOf(path);
  const hunks = hunksOf(f.text);
  if (reading.kind === "not-code" && hunks.length > 0) return notCode(f, path);
  // the header first: placeholders are numbered in reading order
  const header = headerOf(f, r);
  if (hunks.length === 0 || reading.kind === "not-code") return `${header}\n`;
  const ext = extOf(path);
  if (reading.kind === "comment-lines") {
    // no state crosses a line: each line is read alone, no original needed; its strings are not
    // lexed, so every word in it is a name to the reading
    const keep = (l: HunkLine) => dropCommentLines(l.text, reading.markers) === l.text;
    const show = (l: HunkLine) => l.op + showNames(l.text.trimEnd(), () => true, r.namer, ext);
    const read = (h: Hunk) => [h.header, ...h.lines.filter(keep).map(show)];
    return `${[header, ...hunks.flatMap(read)].join("\n")}\n`;
  }
  const before = f.oldPath === undefined ? "" : original;
  if (before === undefined) return summaryOnly(f, header, "code whose original text could not be read");
  const after = f.newPath === undefined ? "" : applyFileDiff(before, f.text);
  if (after === undefined)
    return summaryOnly(f, header, "code whose diff does not apply to its original text");
  const names = { namer: r.namer, ext };
  const oldLines = stripToCode(before, reading.lang, reading.opts, names).split("\n");
  const newLines = stripToCode(after, reading.lang, reading.opts, names).split("\n");
  return `${[header, ...hunks.flatMap((h) => readHunk(h, oldLines, newLines))].join("\n")}\n`;
}

/**
 * The code reading of `diff`. `originals` maps a modified or deleted file's old path to its text
 * before the change; a code file whose original is missing is reduced to its path and counts.
 * `known`: the names shown as written (the snapshot's and the prompt's); the originals' own names
 * and paths are added. Pure.
 */
export function codeReading(diff: string, originals: ReadonlyMap<string, string>, known: KnownNames): string {
  const own = new Set<string>();
  for (const [path, text] of originals) {
    addPathNames(own, path);
    addFileNames(own, path, text);
  }
  const all = knownIn(known, own);
  const r = { known: all, namer: createNamer(all) };
  return splitDiff(diff)
    .map((f) => readFile(f, f.oldPath === undefined ? undefined : originals.get(f.oldPath), r))
    .join("");
}

/**
 * Adds the names and numbers of a snapshot file's code (not its comments or strings) to `into`,
 * as the code reading lexes it; a file that is not code adds nothing. Linear.
 */
export function addFileNames(into: Set<string>, path: string, text: string): void {
  const reading = fileReadingOf(path);
  const ext = extOf(path);
  if (reading.kind === "not-code") return;
  if (reading.kind === "comment-lines") {
    addNames(into, dropCommentLines(text, reading.markers), () => true, ext);
    return;
  }
  const l = lex(text, reading.lang, reading.opts);
  addNames(into, text, (i) => l.code[i] === 1, ext);
}

/** The old paths whose text the code reading of `diff` needs (modified or deleted lexed files). Pure. */
export function originalsNeeded(diff: string): string[] {
  return splitDiff(diff)
    .filter((f) => f.oldPath !== undefined && fileReadingOf(f.oldPath).kind === "lexed")
    .map((f) => f.oldPath!);
}
