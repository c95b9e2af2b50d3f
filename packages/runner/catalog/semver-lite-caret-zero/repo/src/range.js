import { compare, parse } from "./version.js";

/** @typedef {import("./version.js").Version} Version */
/** @typedef {{ op: "<" | "<=" | ">" | ">=" | "=", version: Version }} Comparator */

/**
 * Expands one partial version (`1`, `1.2`, `1.x`, `*`) into the bounds it stands for.
 * @param {string} text
 * @returns {Comparator[]}
 */
function expandPartial(text) {
  if (text === "*" || text === "x" || text === "") return [];
  const parts = text.replace(/^v/, "").split(".");
  const nums = parts.map((p) => (p === "x" || p === "*" ? undefined : Number(p)));
  if (nums.length === 3 && nums.every((n) => n !== undefined)) return [{ op: "=", version: parse(text) }];
  const [major, minor] = nums;
  if (major === undefined) return [];
  if (minor === undefined) {
    return [
      { op: ">=", version: parse(`${major}.0.0`) },
      { op: "<", version: parse(`${major + 1}.0.0`) },
    ];
  }
  return [
    { op: ">=", version: parse(`${major}.${minor}.0`) },
    { op: "<", version: parse(`${major}.${minor + 1}.0`) },
  ];
}

/**
 * `~1.2.3` := >=1.2.3 <1.3.0
 * @param {Version} v
 * @returns {Comparator[]}
 */
function tilde(v) {
  return [
    { op: ">=", version: v },
    { op: "<", version: parse(`${v.major}.${v.minor + 1}.0`) },
  ];
}

/**
 * `^1.2.3` := >=1.2.3 <2.0.0
 * @param {Version} v
 * @returns {Comparator[]}
 */
function caret(v) {
  return [
    { op: ">=", version: v },
    { op: "<", version: parse(`${v.major + 1}.0.0`) },
  ];
}

/**
 * Parses one space-separated comparator set.
 * @param {string} text
 * @returns {Comparator[]}
 */
function parseSet(text) {
  /** @type {Comparator[]} */
  const out = [];
  for (const token of text.trim().split(/\s+/).filter(Boolean)) {
    const m = /^(<=|>=|<|>|=|~|\^)?\s*(.*)$/.exec(token);
    if (!m) throw new TypeError(`invalid comparator '${token}'`);
    const op = m[1];
    const rest = m[2] ?? "";
    if (op === "~") out.push(...tilde(parse(rest)));
    else if (op === "^") out.push(...caret(parse(rest)));
    else if (op === undefined || op === "=") out.push(...expandPartial(rest));
    else out.push({ op: /** @type {Comparator["op"]} */ (op), version: parse(rest) });
  }
  return out;
}

/**
 * Parses a range into alternatives (`||`), each a list of comparators that must all hold.
 * @param {string} range
 * @returns {Comparator[][]}
 */
export function parseRange(range) {
  return range.split("||").map(parseSet);
}

/**
 * @param {Version} v
 * @param {Comparator} c
 * @returns {boolean}
 */
function test(v, c) {
  const d = compare(v, c.version);
  switch (c.op) {
    case "<":
      return d < 0;
    case "<=":
      return d <= 0;
    case ">":
      return d > 0;
    case ">=":
      return d >= 0;
    case "=":
      return d === 0;
  }
}

/**
 * Whether `version` matches `range`. Prereleases match only comparators on the same
 * major.minor.patch that carry a prerelease themselves (npm's rule).
 * @param {string} version
 * @param {string} range
 * @returns {boolean}
 */
export function satisfies(version, range) {
  const v = parse(version);
  return parseRange(range).some((set) => {
    if (!set.every((c) => test(v, c))) return false;
    if (v.prerelease.length === 0) return true;
    return set.some(
      (c) =>
        c.version.prerelease.length > 0 &&
        c.version.major === v.major &&
        c.version.minor === v.minor &&
        c.version.patch === v.patch,
    );
  });
}
