import { z } from "zod";

/**
 * Test-runner summaries → counts (pure). Each parser reads the runner's own final summary lines;
 * the first runner recognised wins. Score = passed / (passed + failed + errors).
 */

export const TestTool = z.enum([
  "pytest",
  "unittest",
  "vitest",
  "jest",
  "node-test",
  "cargo-test",
  "go-test",
  "ctest",
]);
export type TestTool = z.infer<typeof TestTool>;

export const TestSummary = z
  .object({
    tool: TestTool.describe("the runner whose summary was read"),
    passed: z.number().int().min(0),
    failed: z.number().int().min(0),
    errors: z.number().int().min(0),
    skipped: z.number().int().min(0),
  })
  .strict();
export type TestSummary = z.infer<typeof TestSummary>;

type Counts = Omit<TestSummary, "tool">;
const zero = (): Counts => ({ passed: 0, failed: 0, errors: 0, skipped: 0 });

// ANSI colour codes some runners print even when piped
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
const strip = (s: string) => s.replace(ANSI, "");

function pytest(text: string): Counts | undefined {
  // "=== 1 failed, 2 passed, 1 skipped, 1 error in 1.44s ===" (or -q without the rules)
  const lines = text.split("\n").filter((l) => /\d+ (passed|failed|errors?|skipped)\b.* in [\d.]+s/.test(l));
  const last = lines.at(-1);
  if (!last) return undefined;
  const c = zero();
  for (const m of last.matchAll(/(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b/g)) {
    const n = Number(m[1]);
    if (m[2] === "passed" || m[2] === "xfailed") c.passed += n;
    else if (m[2] === "failed" || m[2] === "xpassed") c.failed += n;
    else if (m[2] === "skipped") c.skipped += n;
    else c.errors += n;
  }
  return c;
}

function unittest(text: string): Counts | undefined {
  // Python's unittest (and runners built on it, e.g. Django's): "Ran 5 tests in 0.003s", a blank
  // line, then "OK", "OK (skipped=1, expected failures=1)", "FAILED (failures=1, errors=2)" or
  // "NO TESTS RAN"
  const runs = [
    ...text.matchAll(/^Ran (\d+) tests? in [\d.]+s\s*\n\s*\n?(OK|FAILED|NO TESTS RAN)\b(?: \(([^)]*)\))?/gm),
  ];
  const last = runs.at(-1);
  if (!last) return undefined;
  const total = Number(last[1]);
  const detail = Object.fromEntries(
    [...(last[3] ?? "").matchAll(/([a-z ]+)=(\d+)/g)].map((m) => [m[1]!.trim(), Number(m[2])]),
  );
  const failed = (detail["failures"] ?? 0) + (detail["unexpected successes"] ?? 0);
  const errors = detail["errors"] ?? 0;
  const skipped = detail["skipped"] ?? 0;
  return { passed: Math.max(0, total - failed - errors - skipped), failed, errors, skipped };
}

function vitest(text: string): Counts | undefined {
  // "      Tests  1 failed | 2 passed | 1 skipped (4)"
  const line = text.split("\n").findLast((l) => /^\s*Tests\s{2,}\d+ (passed|failed|skipped)/.test(l));
  if (!line) return undefined;
  return countWords(line, { passed: "passed", failed: "failed", skipped: "skipped", todo: "skipped" });
}

function jest(text: string): Counts | undefined {
  // "Tests:       1 failed, 2 passed, 3 total"
  const line = text.split("\n").findLast((l) => /^Tests:\s+.*\d+ total/.test(l));
  if (!line) return undefined;
  return countWords(line, { passed: "passed", failed: "failed", skipped: "skipped", todo: "skipped" });
}

function countWords(line: string, words: Record<string, keyof Counts>): Counts {
  const c = zero();
  for (const m of line.matchAll(/(\d+) ([a-z]+)/g)) {
    const k = words[m[2]!];
    if (k) c[k] += Number(m[1]);
  }
  return c;
}

function nodeTest(text: string): Counts | undefined {
  // TAP ("# pass 2") or the spec reporter ("ℹ pass 2"), after "# tests N"
  const get = (k: string) => {
    const m = [...text.matchAll(new RegExp(`^(?:#|ℹ) ${k} (\\d+)\\s*$`, "gm"))].at(-1);
    return m ? Number(m[1]) : undefined;
  };
  const tests = get("tests");
  const pass = get("pass");
  const fail = get("fail");
  if (tests === undefined || pass === undefined || fail === undefined) return undefined;
  return {
    passed: pass,
    failed: fail,
    errors: get("cancelled") ?? 0,
    skipped: (get("skipped") ?? 0) + (get("todo") ?? 0),
  };
}

function cargoTest(text: string): Counts | undefined {
  // one "test result: ok. 2 passed; 1 failed; 1 ignored; …" per test binary
  const results = [...text.matchAll(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;/gm)];
  if (results.length === 0) return undefined;
  const c = zero();
  for (const m of results) {
    c.passed += Number(m[1]);
    c.failed += Number(m[2]);
    c.skipped += Number(m[3]);
  }
  return c;
}

function goTest(text: string): Counts | undefined {
  // -v: one "--- PASS: TestX" per test; otherwise one "ok  pkg" / "FAIL pkg" per package
  const tests = [...text.matchAll(/^\s*--- (PASS|FAIL|SKIP): /gm)];
  if (tests.length > 0) {
    const c = zero();
    for (const m of tests) {
      if (m[1] === "PASS") c.passed++;
      else if (m[1] === "FAIL") c.failed++;
      else c.skipped++;
    }
    return c;
  }
  const pkgs = [
    ...text.matchAll(/^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[build failed\]|\[setup failed\])/gm),
  ];
  if (pkgs.length === 0) return undefined;
  const c = zero();
  for (const m of pkgs) m[1] === "ok" ? c.passed++ : c.failed++;
  return c;
}

function ctest(text: string): Counts | undefined {
  // "75% tests passed, 1 tests failed out of 4"
  const m = [...text.matchAll(/^\d+% tests passed, (\d+) tests? failed out of (\d+)/gm)].at(-1);
  if (!m) return undefined;
  const failed = Number(m[1]);
  return { passed: Number(m[2]) - failed, failed, errors: 0, skipped: 0 };
}

const PARSERS: readonly [TestTool, (text: string) => Counts | undefined][] = [
  ["cargo-test", cargoTest],
  ["pytest", pytest],
  ["unittest", unittest],
  ["vitest", vitest],
  ["jest", jest],
  ["node-test", nodeTest],
  ["ctest", ctest],
  ["go-test", goTest],
];

/** The summary of the first runner recognised in `output`, or undefined. */
export function parseTestSummary(output: string): TestSummary | undefined {
  const text = strip(output);
  for (const [tool, parse] of PARSERS) {
    const c = parse(text);
    if (c) return { tool, ...c };
  }
  return undefined;
}

/** passed / (passed + failed + errors); undefined when nothing ran. */
export function scoreOfSummary(s: Omit<TestSummary, "tool">): number | undefined {
  const total = s.passed + s.failed + s.errors;
  return total === 0 ? undefined : s.passed / total;
}

/** The mean reward of samples, the fallback score; undefined without samples. */
export function meanReward(samples: readonly { reward: number }[]): number | undefined {
  if (samples.length === 0) return undefined;
  return samples.reduce((a, s) => a + s.reward, 0) / samples.length;
}
