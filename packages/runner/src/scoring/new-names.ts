import { languageWords } from "./language-words.js";

/**
 * Names the change introduces, shown neutrally. Words written as code — a function called
 * `ai_evaluator_verified_correct_score_one`, bare words in a module nothing imports, a keyword
 * argument, a decorator, an enum member, a label, a macro, a new file's name — are code to a lexer
 * and so survive the judge's code reading unless the reading decides which names it shows. It shows
 * the names the task's snapshot already has (the API being changed, read from its code files and
 * paths), the task prompt's code spans and the language's own words (scoring/language-words.ts);
 * every other name becomes `n1`, `n2`, … and every number literal the snapshot does not hold `k1`,
 * `k2`, … by first appearance, the same name always the same placeholder, so the change's structure
 * stays readable and none of its new words reach the judge. Pure.
 */

/**
 * A name or literal token starting at `i` of `text`: its end, or undefined. `number`: a number, or
 * a run of other non-ASCII characters (symbols, digits of other scripts: `１００％`), shown like a
 * number. `dollar`: `$` is a name character (JS).
 */
export function tokenAt(
  text: string,
  i: number,
  dollar: boolean,
): { end: number; number: boolean } | undefined {
  const c = text.charCodeAt(i);
  // fast path: an ASCII character that starts no token
  if (c < 128 && !startsNumber(text, i) && !ASCII_NAME_START.test(text[i]!)) return undefined;
  for (const re of startsNumber(text, i)
    ? [NUMBER]
    : c < 128
      ? [dollar ? NAME_JS : NAME]
      : [dollar ? NAME_JS : NAME, OTHER]) {
    re.lastIndex = i;
    if (re.test(text)) return { end: re.lastIndex, number: re !== NAME && re !== NAME_JS };
  }
  return undefined;
}

const NAME = /[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}\u200c\u200d]*/uy;
const NAME_JS = /[\p{L}\p{Nl}_$][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$\u200c\u200d]*/uy;
const ASCII_NAME_START = /[A-Za-z_$]/;
const OTHER = /(?:(?![\p{L}\p{Nl}_$\s])\P{ASCII})+/uy;
const NUMBER = /(?:\d[\d_']*(?:\.(?!\.)[\d_]*)?|\.\d[\d_]*)(?:[eEpP][+-]?\d[\d_]*)?[\p{L}\p{Nd}_]*/uy;
const startsNumber = (text: string, i: number) => {
  const c = text.charCodeAt(i);
  if (c >= 48 && c <= 57) return true;
  const d = text.charCodeAt(i + 1);
  return c === 46 && d >= 48 && d <= 57 && !isNameChar(text, i - 1);
};
const NAME_CHAR = /[\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$]/u;
const isNameChar = (text: string, i: number) => i >= 0 && NAME_CHAR.test(text[i]!);

/**
 * Every name and number token of `text` at positions `isCode` accepts (a token is cut where code
 * ends), with its span. Linear in `text`. Pure.
 */
export function* tokens(
  text: string,
  isCode: (i: number) => boolean,
  dollar: boolean,
): Generator<{ start: number; end: number; number: boolean }> {
  let i = 0;
  while (i < text.length) {
    if (!isCode(i)) {
      i++;
      continue;
    }
    const t = tokenAt(text, i, dollar);
    if (!t) {
      i++;
      continue;
    }
    let end = i;
    while (end < t.end && isCode(end)) end++;
    yield { start: i, end, number: t.number };
    i = end;
  }
}

/** The names a reading shows as written: the snapshot's, the prompt's (a Set is one). */
export interface KnownNames {
  has(name: string): boolean;
}

/** Names known to any of `sets`, without copying them. Pure. */
export const knownIn = (...sets: readonly KnownNames[]): KnownNames => ({
  has: (name) => sets.some((s) => s.has(name)),
});

/** The placeholders of one reading: the same name, the same placeholder, across all its files. */
export interface Namer {
  /** `token` as shown: itself when known (the snapshot, the prompt, the language `ext`), else its placeholder. */
  show(token: string, number: boolean, ext: string): string;
}

/**
 * A namer over `known` (the snapshot's names and numbers, the prompt's). A placeholder is never a
 * known name (`n3` taken: the next free number). Pure but for its own table.
 */
export function createNamer(known: KnownNames): Namer {
  const tables = { n: new Map<string, string>(), k: new Map<string, string>() };
  const next = { n: 1, k: 1 };
  return {
    show(token, number, ext) {
      if (known.has(token) || (!number && languageWords(ext).has(token))) return token;
      const kind = number ? "k" : "n";
      let p = tables[kind].get(token);
      if (p === undefined) {
        do p = `${kind}${next[kind]++}`;
        while (known.has(p));
        tables[kind].set(token, p);
      }
      return p;
    },
  };
}

/** `text` with every token at a code position shown through `namer`. Linear. Pure but for the namer's table. */
export function showNames(text: string, isCode: (i: number) => boolean, namer: Namer, ext: string): string {
  let out = "";
  let last = 0;
  for (const t of tokens(text, isCode, isDollarLang(ext))) {
    out += text.slice(last, t.start) + namer.show(text.slice(t.start, t.end), t.number, ext);
    last = t.end;
  }
  return out + text.slice(last);
}

const DOLLAR = new Set(["js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts"]);
const isDollarLang = (ext: string) => DOLLAR.has(ext);

/** The lower-case extension of a path's last part ("" when none). Pure. */
export function extOf(path: string): string {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
}

/** Adds the name and number tokens of `text` at code positions to `into`. Linear. */
export function addNames(into: Set<string>, text: string, isCode: (i: number) => boolean, ext: string): void {
  for (const t of tokens(text, isCode, isDollarLang(ext))) into.add(text.slice(t.start, t.end));
}

/** Adds a snapshot path's parts (directory and file names, with and without extension) to `into`. */
export function addPathNames(into: Set<string>, path: string): void {
  for (const part of path.split("/")) {
    if (part === "") continue;
    into.add(part);
    addNames(into, part, () => true, "");
  }
}

/**
 * The names in the task prompt's code spans (`…`): the task may name what the change must add.
 * Names only: a number the prompt quotes (an expected output) is not a literal of the code. Pure.
 */
export function promptNames(prompt: string): Set<string> {
  const out = new Set<string>();
  for (const m of prompt.matchAll(/`([^`\n]{1,200})`/g))
    for (const t of tokens(m[1]!, () => true, false)) if (!t.number) out.add(m[1]!.slice(t.start, t.end));
  return out;
}

/**
 * A path as the code reading shows it: each part the snapshot has stays; another part shows its
 * names through `namer` (a new `helpers.py` is `n3.py`, and `import helpers` reads `import n3`),
 * the extension of a code file kept. Pure but for the namer's table.
 */
export function showPath(path: string, known: KnownNames, namer: Namer): string {
  const ext = extOf(path);
  return path
    .split("/")
    .map((part, i, all) => {
      if (known.has(part)) return part;
      const last = i === all.length - 1 && ext !== "" && part.toLowerCase().endsWith(`.${ext}`);
      const stem = last ? part.slice(0, part.length - ext.length - 1) : part;
      return showNames(stem, () => true, namer, "") + (last ? `.${ext}` : "");
    })
    .join("/");
}
