import { type Canon, type Emission, Emission as EmissionSchema, type ExternalSite } from "./canon.js";
import { satisfies } from "./compare.js";

/**
 * The scorer's verdict on externalized assertions in one run: each graded test whose assertions
 * were externalized passes only when every one of its sites was emitted as often as it must be
 * (`one`: exactly once per test case; `any`: any number, and the test emitted something) and every
 * emission satisfies its expected value (externalize/compare.ts). Fail closed: a malformed line,
 * an emission for a site no test has, or one under another test's name fails every externalized
 * test of the run; a missing or duplicated emission fails its test. Another test of the same file
 * may run a test's body (borrowedRun: a subclass inherits the method, a test calls it): those
 * emissions are that test's, each held to the site's expected value. Pure.
 */

/** Why each externalized graded id failed in this run (absent: its emissions hold). */
export type ExternalVerdict = ReadonlyMap<string, string>;

/**
 * Most JSON nesting an emission line may have: the emitters stop rendering at depth 64 (`deep`),
 * each level at most three JSON levels (a dict's item: object, array, pair); the schema check and
 * the comparisons recurse, so a deeper line (written by code under test, never by an emitter)
 * is an anomaly before it reaches them.
 */
export const MAX_EMISSION_NESTING = 256;

/** Whether JSON value `v` nests deeper than `limit` arrays and objects; iterative. Pure. */
export function nestsDeeperThan(v: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== "object") continue;
    if (d >= limit) return true;
    for (const y of Array.isArray(x) ? x : Object.values(x)) stack.push([y, d + 1]);
  }
  return false;
}

/** How a graded id's reason starts when the run's whole emission stream was not believed. */
export const UNBELIEVED = "the emissions cannot be believed";

/** The parsed emission lines, or why the whole stream cannot be believed. Pure. */
export function parseEmissions(
  text: string,
  sites: ReadonlyMap<string, ExternalSite>,
): { emissions: Emission[] } | { anomaly: string } {
  const emissions: Emission[] = [];
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    if (line === "" && i === lines.length - 1) continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      return { anomaly: `emission line ${i + 1} is not JSON` };
    }
    if (nestsDeeperThan(json, MAX_EMISSION_NESTING))
      return { anomaly: `emission line ${i + 1} nests deeper than any emitter writes` };
    const e = EmissionSchema.safeParse(json);
    if (!e.success) return { anomaly: `emission line ${i + 1} is not a site, node and rendered value` };
    const site = sites.get(e.data.s);
    if (!site) return { anomaly: `emission line ${i + 1} names a site no graded test has` };
    if ((e.data.w !== undefined) !== site.pair)
      return { anomaly: `emission line ${i + 1} ${site.pair ? "lacks" : "carries"} an expected side` };
    if (baseOf(e.data.n) !== site.test && !borrowedRun(baseOf(e.data.n), site.test))
      return { anomaly: `emission line ${i + 1} reports site of ${site.test} under test ${e.data.n}` };
    emissions.push(e.data);
  }
  return { emissions };
}

/** A pytest node id without its parameters (`file::test[a-b]` → `file::test`). */
export const baseOf = (id: string): string => {
  const i = id.indexOf("[");
  return i < 0 ? id : id.slice(0, i);
};

/**
 * Whether node `node` (without parameters) may run test `test`'s body: another test of the same
 * file. pytest collects a test method a class inherits under every subclass
 * (`f.py::TestTee::test_x` runs `f.py::TestBase::test_x`), and a test may call another
 * (`self.test_simple(tmpfile)` ten times in `test_simple_many`, pytest's capture tests): the
 * body's assertions held there too in the file as written. Pure.
 */
export function borrowedRun(node: string, test: string): boolean {
  const a = node.split("::");
  const b = test.split("::");
  return node !== test && a.length > 1 && b.length > 1 && a[0] === b[0];
}

/** A node id's first whitespace-separated word: the key SWE-bench's pytest parser gives its line. */
export const firstWord = (node: string): string => node.split(/\s/, 1)[0]!;

/**
 * The test cases graded id `id` stands for, with their emissions: the case of that node id; or,
 * where none has it, every case whose node id the row's log parser keys as `id` (`keyOf`; by
 * default its first word — SWE-bench's pytest parser keys a result by the line's first
 * whitespace-separated word, so `test_x[foo, bar-e2]` is graded as `test_x[foo,`; requests' and
 * pylint's parser also shortens an absolute-path parameter to its last segment). Pure.
 */
export function casesOf(
  id: string,
  emissions: readonly Emission[],
  keyOf: (node: string) => string = firstWord,
): Map<string, Emission[]> {
  const exact = emissions.filter((e) => e.n === id);
  if (exact.length) return new Map([[id, exact]]);
  const cases = new Map<string, Emission[]>();
  for (const e of emissions) if (keyOf(e.n) === id) cases.set(e.n, [...(cases.get(e.n) ?? []), e]);
  return cases;
}

/** A node id's parameters, pytest's case id (`f.py::t[a-1]` → `a-1`; none: ""). Pure. */
export const caseIdOf = (id: string): string => {
  const i = id.indexOf("[");
  return i < 0 || !id.endsWith("]") ? "" : id.slice(i + 1, -1);
};

/** How site `s` must be emitted in case `node`: as its count says, never, or unknown case. Pure. */
export function siteRunsIn(s: ExternalSite, node: string): "runs" | "skips" | "unknown" {
  if (!s.cases) return "runs";
  const c = caseIdOf(node);
  return s.cases.run.includes(c) ? "runs" : s.cases.skip.includes(c) ? "skips" : "unknown";
}

/**
 * A per-case expected value (site.byCase) for case `node`: undefined where the site has none,
 * null where its case is not listed. Pure.
 */
export function expectedIn(s: ExternalSite, node: string): Canon | undefined | null {
  if (!s.byCase) return undefined;
  const c = caseIdOf(node);
  return Object.hasOwn(s.byCase, c) ? s.byCase[c]! : null;
}

/** Why graded test `id` fails on `emissions` (its sites `mine`), or undefined when it holds. Pure. */
export function testVerdict(
  id: string,
  mine: readonly ExternalSite[],
  emissions: readonly Emission[],
  keyOf?: (node: string) => string,
): string | undefined {
  const cases = casesOf(id, emissions, keyOf);
  // a case whose every site sits on the side of an if it does not take emits nothing
  if (cases.size === 0 && mine.every((s) => siteRunsIn(s, id) === "skips")) return undefined;
  if (mine.length && cases.size === 0) return `${id} emitted nothing for its externalized assertions`;
  for (const [node, own] of cases) {
    const why = caseVerdict(node, mine, own);
    if (why !== undefined) return why;
  }
  return undefined;
}

/** Why one test case `id` fails on its own emissions `own`, or undefined when it holds. Pure. */
function caseVerdict(
  id: string,
  mine: readonly ExternalSite[],
  own: readonly Emission[],
): string | undefined {
  for (const s of mine) {
    const got = own.filter((e) => e.s === s.site);
    const runs = siteRunsIn(s, id);
    if (runs === "unknown") return `${id} is a case the host did not evaluate its branches for`;
    if (runs === "skips" && got.length > 0)
      return `an assertion of ${id} emitted on the side of an if its parameters do not take`;
    if (runs === "skips") continue;
    if (s.count === "one" && got.length === 0)
      return `an assertion of ${id} emitted nothing (it runs unconditionally)`;
    if (s.count === "one" && got.length > 1)
      return `an assertion of ${id} emitted ${got.length} times (it runs once)`;
    const want = expectedIn(s, id);
    if (want === null) return `${id} is a case the host holds no expected value for`;
    for (const e of got) {
      const ok = want === undefined ? satisfies(s, e.v, e.w) : satisfies({ ...s, pair: true }, e.v, want);
      if (ok !== true) return `an assertion of ${id} failed outside the sandbox: ${ok}`;
    }
  }
  if (mine.some((s) => siteRunsIn(s, id) === "runs") && own.length === 0)
    return `${id} emitted nothing for its externalized assertions`;
  return undefined;
}

/**
 * Per externalized graded id of `ids`, why it failed in this run (see the module note); ids with no
 * externalized site are not judged here. Pure.
 */
export function externalVerdict(
  ids: readonly string[],
  sites: readonly ExternalSite[],
  /** The emissions as the run reported them; undefined: none; `anomaly`: they cannot be read. */
  text: string | undefined | { readonly anomaly: string },
  /** How the row's log parser keys a node id (casesOf); default: its first word. */
  keyOf?: (node: string) => string,
): ExternalVerdict {
  const byTest = new Map<string, ExternalSite[]>();
  for (const s of sites) byTest.set(s.test, [...(byTest.get(s.test) ?? []), s]);
  const judged = ids.filter((id) => byTest.has(baseOf(id)));
  const out = new Map<string, string>();
  if (!judged.length) return out;
  if (text === undefined) {
    for (const id of judged) out.set(id, "the run reported no emissions for its externalized assertions");
    return out;
  }
  const parsed =
    typeof text === "string" ? parseEmissions(text, new Map(sites.map((s) => [s.site, s]))) : text;
  if ("anomaly" in parsed) {
    for (const id of judged) out.set(id, `${UNBELIEVED}: ${parsed.anomaly}`);
    return out;
  }
  for (const id of ids) {
    const mine = [...(byTest.get(baseOf(id)) ?? []), ...borrowedSites(id, parsed.emissions, sites)];
    if (!mine.length) continue;
    const why = testVerdict(id, mine, parsed.emissions, keyOf);
    if (why !== undefined) out.set(id, why);
  }
  return out;
}

/**
 * The sites of other tests that graded `id` ran (borrowedRun), from its own emissions: each holds
 * any number of times there. A site whose expectation depends on its own test's parameters
 * (per-case values, branches) says nothing about another test's run and is not judged there. Pure.
 */
function borrowedSites(
  id: string,
  emissions: readonly Emission[],
  sites: readonly ExternalSite[],
): ExternalSite[] {
  const byId = new Map(sites.map((s) => [s.site, s]));
  const out = new Map<string, ExternalSite>();
  for (const e of emissions) {
    const s = byId.get(e.s);
    if (!s || baseOf(e.n) !== baseOf(id) || s.test === baseOf(id) || s.cases || s.byCase) continue;
    out.set(s.site, { ...s, count: "any" });
  }
  return [...out.values()];
}
