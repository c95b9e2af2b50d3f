import type { Canon, Emission, ExternalSite } from "./canon.js";
import { satisfies } from "./compare.js";
import { baseOf, casesOf, parseEmissions } from "./verdict.js";

/**
 * Tests the host cannot judge from their emissions (issues 41/42): at a site whose expected value
 * is a literal kept on the host (not a pair), the test computed a value the sandbox renders only
 * as an opaque object (`obj`, `deep`, `unrenderable`: requests' CaseInsensitiveDict, a cookie jar,
 * its `.keys()`), and the comparison failed closed. Picked from the GOLD patch's emissions when the
 * task is validated (host-trusted, before any trajectory runs) and kept in the task's hidden
 * scoring data (`tests.run.opaque`); at scoring those tests are left to decoys. Code under test
 * never adds to the record: a site that is opaque at scoring but was not recorded still fails
 * closed. Pure.
 */

/** The opaque types inside a rendered value (its own, its items'), in order, or none. Pure. */
export function opaqueTypes(c: Canon): string[] {
  switch (c.t) {
    case "obj":
      return [c.type];
    case "deep":
      return ["a value nested too deep to render"];
    case "unrenderable":
      return [c.why ? `an unrenderable value (${c.why})` : "an unrenderable value"];
    case "list":
    case "tuple":
    case "set":
      return c.v.flatMap(opaqueTypes);
    case "dict":
      return c.v.flatMap(([k, v]) => [...opaqueTypes(k), ...opaqueTypes(v)]);
    default:
      return [];
  }
}

/** Whether emission `e` at site `s` failed closed because its value is opaque. Pure. */
function failedOpaque(s: ExternalSite, e: Emission): string[] {
  if (s.pair || s.kind === "raises") return [];
  const types = opaqueTypes(e.v);
  return types.length && satisfies(s, e.v, e.w) !== true ? types : [];
}

/**
 * Of graded `ids`, those whose cases emitted an opaque value at a host-literal site where the
 * comparison failed, each with the opaque types seen (`a; b`). Emissions that cannot be believed
 * as a whole pick nothing (the caller reports the run's verdict instead). Pure.
 */
export function opaqueTestsOf(
  ids: readonly string[],
  sites: readonly ExternalSite[],
  text: string | undefined,
  /** How the row's log parser keys a node id (externalize/verdict.ts casesOf). */
  keyOf?: (node: string) => string,
): Record<string, string> {
  if (text === undefined || !sites.length) return {};
  const byId = new Map(sites.map((s) => [s.site, s]));
  const parsed = parseEmissions(text, byId);
  if ("anomaly" in parsed) return {};
  const out: Record<string, string> = {};
  for (const id of ids) {
    const mine = parsed.emissions.filter((e) => baseOf(e.n) === baseOf(id));
    const types = new Set<string>();
    for (const own of casesOf(id, mine, keyOf).values())
      for (const e of own) for (const t of failedOpaque(byId.get(e.s)!, e)) types.add(t);
    if (types.size) out[id] = [...types].sort().join("; ");
  }
  return out;
}

/** Graded ids whose test function has a recorded opaque id (rewriting is per function). Pure. */
export function keptForOpaque(
  graded: readonly string[],
  opaque: Readonly<Record<string, string>> | undefined,
): Set<string> {
  const bases = new Set(Object.keys(opaque ?? {}).map(baseOf));
  return new Set(graded.filter((id) => bases.has(baseOf(id))));
}
