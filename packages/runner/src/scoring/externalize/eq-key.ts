import type { Canon } from "./canon.js";

/**
 * One string per class of values Python's `==` holds equal among rendered values (`1 == 1.0 ==
 * True`, a list is not a tuple, sets and dicts unordered), so unordered comparisons are a sort
 * and a string compare instead of matching every item against every other: a pair site's two
 * sides are both the test process's to choose, and 2 000-item sets matched item by item held the
 * scorer's event loop for seconds (8 000: a minute and a half). Undefined: a value that equals
 * nothing, itself included (NaN, an opaque object, an exception, a value too deep to render).
 * Atoms are self-delimiting (strings and bytes JSON-quoted), so a key never collides with one
 * of another shape. Pure.
 */
export function pyEqKey(c: Canon): string | undefined {
  switch (c.t) {
    case "none":
      return "N";
    case "bool":
      return c.v ? "n:1" : "n:0";
    case "int":
      return `n:${BigInt(c.v)}`;
    case "float":
      return realKey(pyFloat(c.v));
    case "complex": {
      const [re, im] = [pyFloat(c.v[0]), pyFloat(c.v[1])];
      if (Number.isNaN(re) || Number.isNaN(im)) return undefined;
      return im === 0 ? realKey(re) : `c:${re}:${im}`;
    }
    case "str":
      return `s${JSON.stringify(c.v)}`;
    case "bytes":
      return `b${JSON.stringify(c.v)}`;
    case "list":
    case "tuple":
      return joined(c.t === "list" ? "l" : "t", c.v.map(pyEqKey), false);
    case "set":
      return joined("S", c.v.map(pyEqKey), true);
    case "dict":
      return joined(
        "d",
        c.v.map(([k, v]) => joined("t", [pyEqKey(k), pyEqKey(v)], false)),
        true,
      );
    default:
      return undefined;
  }
}

/** Whether `a` and `b` hold the same items in any order (a multiset, by {@link pyEqKey}). Pure. */
export function sameItemsByKey(a: readonly Canon[], b: readonly Canon[]): boolean {
  if (a.length !== b.length) return false;
  const ka = a.map(pyEqKey);
  const kb = b.map(pyEqKey);
  if (ka.includes(undefined) || kb.includes(undefined)) return false;
  const sa = (ka as string[]).sort();
  const sb = (kb as string[]).sort();
  return sa.every((k, i) => k === sb[i]);
}

const pyFloat = (s: string): number =>
  s === "inf" ? Infinity : s === "-inf" ? -Infinity : s === "nan" ? Number.NaN : Number(s);

/** A real number's key: an integral one as the int it equals, NaN none. */
function realKey(x: number): string | undefined {
  if (Number.isNaN(x)) return undefined;
  return Number.isInteger(x) ? `n:${BigInt(x)}` : `f:${x}`;
}

/** Items' keys in brackets after `tag` (sorted: unordered); undefined when any item has none. */
function joined(tag: string, keys: (string | undefined)[], sorted: boolean): string | undefined {
  if (keys.includes(undefined)) return undefined;
  const ks = sorted ? (keys as string[]).sort() : (keys as string[]);
  return `${tag}[${ks.join(",")}]`;
}
