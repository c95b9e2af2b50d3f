/**
 * @typedef {object} Version
 * @property {number} major
 * @property {number} minor
 * @property {number} patch
 * @property {(string | number)[]} prerelease identifiers after `-`; numeric ones as numbers
 */

const VERSION = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/**
 * Parses a version string (a leading `v` and build metadata are accepted and ignored).
 * @param {string} text
 * @returns {Version}
 */
export function parse(text) {
  const m = VERSION.exec(text.trim());
  if (!m) throw new TypeError(`invalid version: '${text}'`);
  const prerelease = m[4] ? m[4].split(".").map((id) => (/^\d+$/.test(id) ? Number(id) : id)) : [];
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), prerelease };
}

/**
 * @param {(string | number)[]} a
 * @param {(string | number)[]} b
 * @returns {number}
 */
function comparePrerelease(a, b) {
  if (a.length === 0 || b.length === 0) return b.length - a.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (x === y) continue;
    if (typeof x === "number" && typeof y === "number") return x < y ? -1 : 1;
    if (typeof x === "number") return -1;
    if (typeof y === "number") return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Compares two versions: -1, 0 or 1.
 * @param {string | Version} a
 * @param {string | Version} b
 * @returns {-1 | 0 | 1}
 */
export function compare(a, b) {
  const x = typeof a === "string" ? parse(a) : a;
  const y = typeof b === "string" ? parse(b) : b;
  for (const k of /** @type {const} */ (["major", "minor", "patch"])) {
    if (x[k] !== y[k]) return x[k] < y[k] ? -1 : 1;
  }
  const p = comparePrerelease(x.prerelease, y.prerelease);
  return p === 0 ? 0 : p < 0 ? -1 : 1;
}

/**
 * @param {Version} v
 * @returns {string}
 */
export function format(v) {
  const pre = v.prerelease.length ? `-${v.prerelease.join(".")}` : "";
  return `${v.major}.${v.minor}.${v.patch}${pre}`;
}
