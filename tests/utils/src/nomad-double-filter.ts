/**
 * The part of go-bexpr (Nomad's `?filter=` language) the Nomad double understands: clauses
 * `<selector> == "<value>"`, `!=`, `is empty`, `is not empty`, joined by `and`. Selectors are
 * dotted paths, with `Meta["key"]` or `Meta.key` for map entries. Anything else is an error, as a
 * filter Nomad could not parse is (HTTP 400).
 */

type Clause = { path: string[]; op: "==" | "!=" | "empty" | "not-empty"; value?: string };

export class FilterError extends Error {}

function parsePath(sel: string): string[] {
  const out: string[] = [];
  const re = /([A-Za-z_][A-Za-z0-9_]*)|\["([^"]*)"\]|\.([A-Za-z0-9_-]+)/gy;
  let m: RegExpExecArray | null;
  let pos = 0;
  re.lastIndex = 0;
  while (pos < sel.length) {
    re.lastIndex = pos;
    m = re.exec(sel);
    if (!m)
      throw new FilterError(`failed to parse filter: unexpected '${sel.slice(pos)}' in selector '${sel}'`);
    out.push(m[1] ?? m[2] ?? m[3]!);
    pos = re.lastIndex;
  }
  return out;
}

export function parseFilter(expr: string): Clause[] {
  const parts = expr.split(/\s+and\s+/);
  return parts.map((raw) => {
    const p = raw.trim();
    let m = /^(.+?)\s*(==|!=)\s*"((?:[^"\\]|\\.)*)"$/.exec(p);
    if (m)
      return { path: parsePath(m[1]!.trim()), op: m[2] as "==" | "!=", value: m[3]!.replace(/\\(.)/g, "$1") };
    m = /^(.+?)\s+is\s+(not\s+)?empty$/.exec(p);
    if (m) return { path: parsePath(m[1]!.trim()), op: m[2] ? "not-empty" : "empty" };
    throw new FilterError(`failed to parse filter: unsupported expression '${p}'`);
  });
}

function lookup(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const k of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

export function matchesFilter(clauses: readonly Clause[], obj: unknown): boolean {
  return clauses.every((c) => {
    const v = lookup(obj, c.path);
    switch (c.op) {
      case "==":
        return v !== undefined && String(v) === c.value;
      case "!=":
        return v === undefined || String(v) !== c.value;
      case "empty":
        return (
          v === undefined || v === null || v === "" || (typeof v === "object" && Object.keys(v).length === 0)
        );
      case "not-empty":
        return !(
          v === undefined ||
          v === null ||
          v === "" ||
          (typeof v === "object" && Object.keys(v).length === 0)
        );
    }
    return false;
  });
}
