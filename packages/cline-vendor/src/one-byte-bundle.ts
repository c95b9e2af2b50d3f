import { type Comment, type Node, parse } from "acorn";

/**
 * The core's bundle as a one-byte string (issue 32). V8 keeps a script's source in Latin-1 (one
 * byte a character) unless one character is above U+00FF; then the whole 45 M characters are held
 * as UTF-16. This rewrites every such character into an ASCII form with the same meaning, found with
 * a real JavaScript parser (acorn): `\uXXXX` escapes in string literals, untagged template literals
 * (the cooked text: the only text an untagged template exposes), identifiers and regular
 * expressions, ASCII text in comments, an ASCII space or newline for Unicode white space and line
 * terminators between tokens. A tagged template's raw text is what its tag reads, so a character
 * there is left alone and reported: the bundle then stays two-byte (`escaped.oneByte` false).
 *
 * Not preserved, by construction: the source text itself (`Function.prototype.toString` of a
 * function around a rewritten comment or literal, a regular expression's `.source`) — reported as
 * counts so a caller can decide.
 */

/** Where a character above U+00FF sat. */
export type Place =
  | "comment"
  | "string"
  | "template"
  | "identifier"
  | "regexp"
  | "whitespace"
  | "tagged-template";

interface Region {
  readonly place: Place;
  readonly start: number;
  readonly end: number;
  /** regexp: its flags; tagged-template: the tag's source text (first 60 characters). */
  readonly detail?: string;
}

export interface EscapeResult {
  readonly text: string;
  /** Characters (UTF-16 code units) above U+00FF found, per place. */
  readonly counts: Readonly<Record<Place, number>>;
  /** Tag texts of tagged templates holding such characters (each left alone). */
  readonly taggedTags: readonly string[];
  /** True when no character above U+00FF is left: V8 will hold the source as one byte a character. */
  readonly oneByte: boolean;
}

const hex4 = (c: number) => `\\u${c.toString(16).toUpperCase().padStart(4, "0")}`;
const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;
const isLineTerminator = (c: number) => c === 0x2028 || c === 0x2029;

/** Offsets of every UTF-16 code unit above U+00FF, ascending. */
export function wideOffsets(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) out.push(i);
  return out;
}

/** Whether any offset of the ascending list lies in [start, end). */
function anyIn(offsets: readonly number[], start: number, end: number): boolean {
  let lo = 0;
  let hi = offsets.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (offsets[m]! < start) lo = m + 1;
    else hi = m;
  }
  return lo < offsets.length && offsets[lo]! < end;
}

/** The code point at `i` as escape text: `\u{…}` when `braces` and astral, else one `\uXXXX` per unit. */
function escapeAt(text: string, i: number, braces: boolean): { out: string; width: number } {
  const c = text.charCodeAt(i);
  const d = text.charCodeAt(i + 1);
  if (isHigh(c) && isLow(d)) {
    if (braces) return { out: `\\u{${text.codePointAt(i)!.toString(16).toUpperCase()}}`, width: 2 };
    return { out: hex4(c) + hex4(d), width: 2 };
  }
  return { out: hex4(c), width: 1 };
}

/**
 * Pure: one literal's source text with each character above U+00FF escaped. A backslash before
 * such a character (a non-escape character in a string, an identity escape in a non-Unicode
 * regular expression) is folded into the escape; a backslash before U+2028/U+2029 in a string or
 * template is a line continuation (no character), so both go.
 */
export function escapeLiteralText(
  text: string,
  kind: "string" | "template" | "regexp",
  braces: boolean,
): string {
  let out = "";
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 0x5c /* \ */) {
      const n = text.charCodeAt(i + 1);
      if (n > 0xff) {
        if (isLineTerminator(n) && kind !== "regexp") {
          i += 2;
          continue;
        }
        const e = escapeAt(text, i + 1, braces);
        out += e.out;
        i += 1 + e.width;
        continue;
      }
      out += text.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (c > 0xff) {
      const e = escapeAt(text, i, braces);
      out += e.out;
      i += e.width;
      continue;
    }
    out += text[i];
    i++;
  }
  return out;
}

/** Pure: an identifier's source text, `\uXXXX` (BMP) or `\u{…}` (astral: no surrogate escapes in names). */
export function escapeIdentifierText(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; ) {
    if (text.charCodeAt(i) > 0xff) {
      const e = escapeAt(text, i, true);
      out += e.out;
      i += e.width;
    } else out += text[i++];
  }
  return out;
}

/** Pure: a comment's text in ASCII; a line terminator stays one (a newline), which ASI can depend on. */
export function escapeCommentText(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out +=
      c <= 0xff ? text[i] : isLineTerminator(c) ? "\n" : `u+${c.toString(16).toUpperCase().padStart(4, "0")}`;
  }
  return out;
}

type AnyNode = Node & Record<string, unknown>;

/** Collects the regions (literals, names, template parts, tagged or not) that hold a wide offset. */
function collectRegions(ast: Node, source: string, offsets: readonly number[]): Region[] {
  const regions: Region[] = [];
  const stack: { node: AnyNode; tag?: string }[] = [{ node: ast as AnyNode }];
  while (stack.length > 0) {
    const { node, tag } = stack.pop()!;
    if (!anyIn(offsets, node.start, node.end)) continue;
    const region = regionOf(node, tag);
    if (region) {
      regions.push(region);
      continue;
    }
    const childTag =
      node.type === "TaggedTemplateExpression"
        ? source.slice((node["tag"] as Node).start, (node["tag"] as Node).end).slice(0, 60)
        : undefined;
    for (const [key, v] of Object.entries(node)) {
      const t = key === "quasi" ? childTag : node.type === "TemplateLiteral" ? tag : undefined;
      if (Array.isArray(v)) {
        for (const c of v)
          if (c && typeof c.type === "string") stack.push({ node: c, ...(t ? { tag: t } : {}) });
      } else if (v && typeof v === "object" && typeof (v as Node).type === "string")
        stack.push({ node: v as AnyNode, ...(t ? { tag: t } : {}) });
    }
  }
  return regions;
}

/** Sorted by start, one region per start (a shorthand property's key and value are the same text). */
function dedupeByStart(regions: Region[]): Region[] {
  const sorted = regions.sort((a, b) => a.start - b.start);
  return sorted.filter((r, i) => i === 0 || sorted[i - 1]!.start !== r.start);
}

function regionOf(node: AnyNode, tag: string | undefined): Region | undefined {
  const at = { start: node.start, end: node.end };
  switch (node.type) {
    case "Literal": {
      const regex = node["regex"] as { flags: string } | undefined;
      if (regex) return { place: "regexp", ...at, detail: regex.flags };
      return typeof node["value"] === "string" ? { place: "string", ...at } : undefined;
    }
    case "Identifier":
    case "PrivateIdentifier":
      return { place: "identifier", ...at };
    case "TemplateElement":
      return tag !== undefined
        ? { place: "tagged-template", ...at, detail: tag }
        : { place: "template", ...at };
    default:
      return undefined;
  }
}

/** Unicode white space and line terminators outside tokens (the only other place a wide character can be). */
function whitespaceReplacement(c: number): string | undefined {
  if (isLineTerminator(c)) return "\n";
  if (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  )
    return " ";
  return undefined;
}

function rewriteRegion(text: string, r: Region): string {
  switch (r.place) {
    case "comment":
      return escapeCommentText(text);
    case "identifier":
      return escapeIdentifierText(text);
    case "string":
      return escapeLiteralText(text, "string", false);
    case "template":
      return escapeLiteralText(text, "template", false);
    case "regexp": {
      const slash = text.lastIndexOf("/");
      const braces = /[uv]/.test(r.detail ?? "");
      return escapeLiteralText(text.slice(0, slash), "regexp", braces) + text.slice(slash);
    }
    default:
      return text;
  }
}

/** Parses a script the way Node runs a CommonJS bundle; comments are collected. */
export function parseScript(text: string, onComment?: Comment[]): Node {
  return parse(text, {
    ecmaVersion: "latest",
    sourceType: "script",
    allowHashBang: true,
    allowReturnOutsideFunction: true,
    ...(onComment ? { onComment } : {}),
  });
}

const zeroCounts = (): Record<Place, number> => ({
  comment: 0,
  string: 0,
  template: 0,
  identifier: 0,
  regexp: 0,
  whitespace: 0,
  "tagged-template": 0,
});

/**
 * Pure: the script with every character above U+00FF in an ASCII form of the same meaning, but
 * those in tagged templates. Throws naming the offset when a wide character is in no region a
 * parser knows (it cannot be, in a script that parses).
 */
export function escapeWideCharacters(source: string): EscapeResult {
  const offsets = wideOffsets(source);
  const counts = zeroCounts();
  if (offsets.length === 0) return { text: source, counts, taggedTags: [], oneByte: true };
  const comments: Comment[] = [];
  const ast = parseScript(source, comments);
  const regions = dedupeByStart([
    ...collectRegions(ast, source, offsets),
    ...comments
      .filter((c) => anyIn(offsets, c.start, c.end))
      .map((c) => ({ place: "comment" as const, start: c.start, end: c.end })),
  ]);
  const taggedTags: string[] = [];
  // White space is replaced one unit for one unit, so every region keeps its offsets.
  let spaced = "";
  let at = 0;
  let ri = 0;
  for (const o of offsets) {
    while (ri < regions.length && regions[ri]!.end <= o) ri++;
    const r = regions[ri];
    if (r && r.start <= o) {
      counts[r.place]++;
      if (r.place === "tagged-template" && r.detail !== undefined) taggedTags.push(r.detail);
      continue;
    }
    const ws = whitespaceReplacement(source.charCodeAt(o));
    if (ws === undefined)
      throw new Error(
        `one-byte bundle: U+${source.charCodeAt(o).toString(16)} at offset ${o} is in no literal, name, comment or white space the parser reported; the transform does not know this place`,
      );
    counts.whitespace++;
    spaced += source.slice(at, o) + ws;
    at = o + 1;
  }
  spaced += source.slice(at);
  let text = "";
  at = 0;
  for (const r of regions) {
    text += spaced.slice(at, r.start) + rewriteRegion(spaced.slice(r.start, r.end), r);
    at = r.end;
  }
  text += spaced.slice(at);
  return { text, counts, taggedTags: [...new Set(taggedTags)], oneByte: wideOffsets(text).length === 0 };
}

/**
 * Pure: a regular expression's pattern with the escapes this transform writes decoded back
 * (`\uXXXX` / `\u{…}` above U+00FF, surrogate pairs joined) and identity escapes of wide
 * characters unescaped, so the original's and the rewrite's patterns compare equal.
 */
export function normalizeWideEscapes(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; ) {
    if (pattern[i] !== "\\") {
      out += pattern[i++];
      continue;
    }
    const braced = /^\\u\{([0-9A-Fa-f]+)\}/.exec(pattern.slice(i, i + 12));
    const plain = /^\\u([0-9A-Fa-f]{4})/.exec(pattern.slice(i, i + 6));
    const cp = braced ? Number.parseInt(braced[1]!, 16) : plain ? Number.parseInt(plain[1]!, 16) : -1;
    if (cp > 0xff) {
      out += String.fromCodePoint(cp);
      i += (braced ?? plain)![0].length;
    } else if (pattern.charCodeAt(i + 1) > 0xff) {
      out += pattern[i + 1];
      i += 2;
    } else {
      out += pattern.slice(i, i + 2);
      i += 2;
    }
  }
  return out;
}
