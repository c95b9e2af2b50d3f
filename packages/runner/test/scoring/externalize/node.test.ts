import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { jsSame } from "../../../src/scoring/externalize/compare.js";
import { jsCanon } from "../../../src/scoring/externalize/js-emitter.js";
import { literalValue } from "../../../src/scoring/externalize/js-literal.js";
import { jsTokens } from "../../../src/scoring/externalize/js-tokens.js";
import { externalizeNode, rewriteNodeTests } from "../../../src/scoring/externalize/node.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { tempDir } from "../../helpers/temp-dir.js";

// The host's node test rewriter (issue 42) on a file with the shapes it takes (strict equalities
// against literals, computed expectations, throws matchers, loops and ifs), then the rewritten file
// run for real by `node --test` against a right and a wrong implementation: the literals are gone
// from the file, and the scorer's comparison of the emissions passes the right one only.

const TESTS = `import assert from "node:assert/strict";
import { test } from "node:test";
import { half, parse, pages } from "./lib.js";

test("literals", () => {
  assert.equal(half(9), 4.5); // a comment with 'quotes' and a /slash/
  assert.deepEqual(pages(7, 3), { count: 3, last: [6] }, "pages of seven");
  assert.equal(parse("2d"), 2 * 86_400_000);
});

test("computed and looped", () => {
  for (const n of [2, 5, 6]) assert.equal(half(n) * 2, n);
  if (half(1) > 0) assert.equal(half(1), 0.5);
  const label = \`half of \${2}\`;
  assert.equal(label.length > 0, true);
});

test("errors", () => {
  assert.throws(() => parse("x"), { name: "SyntaxError", message: /not a duration/ });
  assert.throws(() => parse("y"), SyntaxError);
  assert.throws(() => parse("z"), /SyntaxError: not/);
  assert.throws(() => parse("w"), { message: "not a duration: w" });
});

test("early return", () => {
  if (half(2) === 1) return;
  assert.equal(half(2), 1);
});

test("not graded", () => {
  assert.equal(half(8), 4);
});
`;

const RIGHT = `export const half = (n) => n / 2;
export function parse(s) {
  if (s === "2d") return 2 * 86_400_000;
  throw new SyntaxError("not a duration: " + s);
}
export const pages = (n, size) => ({ last: [n - 1], count: Math.ceil(n / size) });
`;

const WRONG = RIGHT.replace("Math.ceil", "Math.floor").replace("n / 2", "Math.trunc(n / 2)");

const GRADED = ["literals", "computed and looped", "errors", "early return"];
const EXTERNALIZED = GRADED.slice(0, 3);

async function runWith(impl: string, rewritten: string): Promise<{ emitted: string; passed: Set<string> }> {
  await using tmp = await tempDir("flakegym-externalize-node-");
  await writeFile(join(tmp.path, "package.json"), '{"type":"module"}\n');
  await writeFile(join(tmp.path, "lib.js"), impl);
  await writeFile(join(tmp.path, "lib.test.mjs"), rewritten);
  const emit = join(tmp.path, "emit");
  using deadline = createDeadline({ timeout: { limit: "node --test of the rewritten file", ms: 60_000 } });
  const r = await execa(process.execPath, ["--test", "--test-reporter=tap", "lib.test.mjs"], {
    cwd: tmp.path,
    reject: false,
    cancelSignal: deadline.signal,
    env: { FLAKEGYM_EMIT: emit },
  });
  const passed = new Set([...r.stdout.matchAll(/^\s*ok \d+ - (.+)$/gm)].map((m) => m[1]!));
  return { emitted: await readFile(emit, "utf8").catch(() => ""), passed };
}

describe("the JavaScript tokenizer and literals (scoring/externalize/js-tokens.ts, js-literal.ts)", () => {
  it("tells a RegExp from a division, scans templates' substitutions, drops comments, refuses what does not end", () => {
    const kinds = (s: string) => jsTokens(s)?.map((t) => `${t.kind}:${t.text}`);
    expect(kinds("a / b / c")).toEqual(["name:a", "punct:/", "name:b", "punct:/", "name:c"]);
    expect(kinds("x(/a\\/[/]b/g)")).toEqual(["name:x", "punct:(", "regex:/a\\/[/]b/g", "punct:)"]);
    expect(kinds("`a${ {b: `c${1}`}.b }d` // c\n/* d */ 1_0.5e3")).toEqual([
      "tmpl:`a${ {b: `c${1}`}.b }d`",
      "num:1_0.5e3",
    ]);
    for (const bad of ["'open", "`open ${", "/* open", "x = /open\n/"]) expect(jsTokens(bad)).toBeUndefined();
  });

  it("evaluates literals only: a name, a call or a member access is computed", () => {
    const lit = (s: string) => literalValue(s, jsTokens(s)!);
    expect(lit('{ a: [1, -2.5, "x"], "b": null, c: 2 * 3 }')).toEqual({
      value: { a: [1, -2.5, "x"], b: null, c: 6 },
    });
    for (const computed of [
      '"x"["constructor"]["constructor"]("return 1")()',
      "x",
      "f(1)",
      "[1].length",
      "undefined",
    ])
      expect(lit(computed)).toHaveProperty("why");
  });

  it("compares as Object.is and deepStrictEqual: no 1 == true, -0 is not 0, NaN is NaN, key order free", () => {
    const same = (a: unknown, b: unknown) => jsSame(jsCanon(a), jsCanon(b));
    expect(same(1, true)).toBe(false);
    expect(same(1, "1")).toBe(false);
    expect(same(-0, 0)).toBe(false);
    expect(same(Number.NaN, Number.NaN)).toBe(true);
    expect(same({ a: 1, b: [2] }, { b: [2], a: 1 })).toBe(true);
    expect(same({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(same([1, 2], [1, 2, 3])).toBe(false);
    expect(same(new Map(), new Map())).toBe(false);
    expect(same(undefined, undefined)).toBe(false);
    class Page {
      count = 3;
    }
    expect(same(new Page(), { count: 3 })).toBe(false);
  });
});

describe("the host's node test rewriter (scoring/externalize/node.ts)", () => {
  it("takes literal equalities and throws matchers; computed expectations become pairs; counts follow the control flow", () => {
    const r = rewriteNodeTests([{ path: "lib.test.mjs", text: TESTS }], GRADED);
    const text = r.files[0]!.text!;
    for (const gone of [
      "4.5",
      "count: 3",
      "86_400_000",
      "not a duration",
      "SyntaxError: not",
      "SyntaxError)",
    ])
      expect(text).not.toContain(gone);
    expect(text).toContain("assert.equal(half(8), 4);");
    expect(text.startsWith('import { appendFileSync as __fgAppend } from "node:fs";')).toBe(true);
    const per = (t: string) => r.sites.filter((s) => s.test === t).map((s) => [s.kind, s.pair, s.count]);
    expect(per("literals")).toEqual([
      ["same", false, "one"],
      ["same", false, "one"],
      ["same", false, "one"],
    ]);
    expect(per("computed and looped")).toEqual([
      ["same", true, "any"],
      ["same", false, "any"],
      ["same", false, "one"],
    ]);
    expect(per("errors")).toEqual(Array(4).fill(["raises", false, "one"]));
    expect(r.sites.filter((s) => s.test === "errors").map((s) => s.expected)).toEqual([
      { names: ["SyntaxError"], match: { t: "str", v: "not a duration" } },
      { names: ["SyntaxError"], match: null },
      { names: ["<thrown>"], match: { t: "str", v: "SyntaxError: not" } },
      { names: ["<thrown>"], match: { t: "str", v: "^not a duration: w$" } },
    ]);
    // after a return it may never run, and a test that may emit nothing is left to decoys
    expect(per("early return")).toEqual([]);
    expect(r.tests["early return"]!.kept).toEqual(["none of its assertions runs unconditionally"]);
    expect(r.tests["not graded"]).toBeUndefined();
  });

  it("leaves what it cannot compare as node does, and says why", () => {
    const legacy = `const assert = require("node:assert");
const { test } = require("node:test");
test("loose", () => {
  assert.equal(f(), 1);
  assert.deepEqual(g(), [1]);
  assert.strictEqual(f(), 1);
  assert.strictEqual(g(), [1]);
  assert.equal(f(), undefined);
});
`;
    const r = rewriteNodeTests([{ path: "t.test.js", text: legacy }], ["loose"]);
    expect(r.sites.map((s) => s.expected)).toEqual([{ t: "float", v: "1" }]);
    expect(r.tests.loose!.kept).toEqual([
      "assert.equal is not externalized (legacy)",
      "assert.deepEqual is not externalized (legacy)",
      "assert.strictEqual of a fresh object never holds (identity)",
      "assert.equal is not externalized (legacy)",
    ]);
    expect(r.files[0]!.text!.startsWith('const { appendFileSync: __fgAppend } = require("node:fs");')).toBe(
      true,
    );
  });

  it("the rewritten file runs: the right implementation holds outside the sandbox, a wrong one fails there though node passes it", async () => {
    const ext = await externalizeNode([{ path: "lib.test.mjs", content: Buffer.from(TESTS) }], GRADED);
    const rewritten = ext.files[0]!.content.toString();
    const right = await runWith(RIGHT, rewritten);
    expect(externalVerdict(GRADED, ext.sites, right.emitted)).toEqual(new Map());
    expect([...right.passed].sort()).toEqual([...GRADED, "not graded"].sort());
    const wrong = await runWith(WRONG, rewritten);
    expect(EXTERNALIZED.every((g) => wrong.passed.has(g))).toBe(true);
    const v = externalVerdict(GRADED, ext.sites, wrong.emitted);
    expect([...v.keys()].sort()).toEqual(["computed and looped", "literals"]);
    expect(v.get("literals")).toMatch(/failed outside the sandbox/);
  }, 120_000);

  it("an emission for a site no graded test has, or a site emitted twice, fails closed", async () => {
    const ext = await externalizeNode([{ path: "lib.test.mjs", content: Buffer.from(TESTS) }], GRADED);
    const forged = '{"s":"0000000000000000","n":"literals","v":{"t":"float","v":"4.5"}}\n';
    expect([...externalVerdict(GRADED, ext.sites, forged).keys()].sort()).toEqual([...EXTERNALIZED].sort());
    const one = ext.sites.find((s) => s.test === "literals")!;
    const twice = `${JSON.stringify({ s: one.site, n: "literals", v: one.expected })}\n`.repeat(2);
    expect(externalVerdict(["literals"], ext.sites, twice).get("literals")).toMatch(/emitted 2 times/);
  });
});
