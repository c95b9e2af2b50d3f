import type { Comment, Node } from "acorn";
import { normalizeWideEscapes, parseScript } from "./one-byte-bundle.js";

/**
 * Proof that a rewritten script means what the original meant: both are parsed and their syntax
 * trees walked side by side. Every node must have the same type and shape; every string literal's
 * value, identifier's name, template part's cooked text (and raw text under a tag), number, flag
 * and operator must be equal; a regular expression's pattern equal once this transform's escapes are
 * decoded; the comments as many. Only offsets and the `raw` source text of literals may differ.
 */

export interface MeaningDifference {
  /** Offset in the original script. */
  readonly offset: number;
  readonly what: string;
}

export interface MeaningReport {
  readonly nodes: number;
  readonly stringLiterals: number;
  readonly differences: readonly MeaningDifference[];
}

const POSITION_KEYS = new Set(["start", "end", "loc", "range", "raw"]);
type AnyNode = Node & Record<string, unknown>;
const isNode = (v: unknown): v is AnyNode =>
  typeof v === "object" && v !== null && typeof (v as { type?: unknown }).type === "string";

function literalDifference(a: AnyNode, b: AnyNode): string | undefined {
  const ra = a["regex"] as { pattern: string; flags: string } | undefined;
  const rb = b["regex"] as { pattern: string; flags: string } | undefined;
  if (ra || rb) {
    if (!ra || !rb || ra.flags !== rb.flags) return "a regular expression's flags differ";
    return normalizeWideEscapes(ra.pattern) === normalizeWideEscapes(rb.pattern)
      ? undefined
      : `regular expression /${ra.pattern}/ became /${rb.pattern}/`;
  }
  if (a["bigint"] !== b["bigint"]) return "a BigInt literal differs";
  return Object.is(a["value"], b["value"])
    ? undefined
    : `literal ${JSON.stringify(a["value"])} became ${JSON.stringify(b["value"])}`;
}

function templateDifference(a: AnyNode, b: AnyNode, tagged: boolean): string | undefined {
  const va = a["value"] as { cooked: string | null; raw: string };
  const vb = b["value"] as { cooked: string | null; raw: string };
  if (va.cooked !== vb.cooked)
    return `template text ${JSON.stringify(va.cooked)} became ${JSON.stringify(vb.cooked)}`;
  if (tagged && va.raw !== vb.raw) return `a tagged template's raw text ${JSON.stringify(va.raw)} changed`;
  return undefined;
}

/** Pure: the differences in meaning between two parsed scripts (first `limit`). */
export function compareTrees(a: Node, b: Node, limit = 20): MeaningReport {
  const differences: MeaningDifference[] = [];
  let nodes = 0;
  let stringLiterals = 0;
  const stack: [AnyNode, AnyNode, boolean][] = [[a as AnyNode, b as AnyNode, false]];
  const differ = (n: AnyNode, what: string) => differences.push({ offset: n.start, what });
  while (stack.length > 0 && differences.length < limit) {
    const [x, y, tagged] = stack.pop()!;
    nodes++;
    if (x.type !== y.type) {
      differ(x, `node ${x.type} became ${y.type}`);
      continue;
    }
    let d: string | undefined;
    if (x.type === "Literal") {
      if (typeof x["value"] === "string") stringLiterals++;
      d = literalDifference(x, y);
    } else if (x.type === "TemplateElement") d = templateDifference(x, y, tagged);
    if (d) differ(x, d);
    for (const key of Object.keys(x)) {
      if (POSITION_KEYS.has(key) || key === "regex") continue;
      if (key === "value" && (x.type === "Literal" || x.type === "TemplateElement")) continue;
      // a directive's raw text: only "use strict" (ASCII, never rewritten) changes what code means
      if (key === "directive") {
        if ((x[key] === "use strict") !== (y[key] === "use strict"))
          differ(x, "a 'use strict' directive changed");
        continue;
      }
      const u = x[key];
      const v = y[key];
      const underTag =
        x.type === "TaggedTemplateExpression" ? key === "quasi" : x.type === "TemplateLiteral" && tagged;
      if (Array.isArray(u) && Array.isArray(v) && u.length === v.length) {
        for (let i = u.length - 1; i >= 0; i--) {
          if (isNode(u[i]) && isNode(v[i])) stack.push([u[i], v[i], underTag]);
          else if (u[i] !== v[i]) differ(x, `${x.type}.${key}[${i}] differs`);
        }
      } else if (isNode(u) && isNode(v)) stack.push([u, v, underTag]);
      else if (!Object.is(u, v) && !(Array.isArray(u) && Array.isArray(v) && u.length === v.length))
        differ(
          x,
          `${x.type}.${key} ${JSON.stringify(u)?.slice(0, 80)} became ${JSON.stringify(v)?.slice(0, 80)}`,
        );
    }
  }
  return { nodes, stringLiterals, differences };
}

/** Parses both scripts and compares them; comment counts must match too. */
export function compareMeaning(original: string, rewritten: string, limit = 20): MeaningReport {
  const ca: Comment[] = [];
  const cb: Comment[] = [];
  const report = compareTrees(parseScript(original, ca), parseScript(rewritten, cb), limit);
  if (ca.length === cb.length) return report;
  return {
    ...report,
    differences: [...report.differences, { offset: 0, what: `${ca.length} comments became ${cb.length}` }],
  };
}
