import { z } from "zod";

/**
 * The numbers of an eval, as pure functions of trial results (docs/reference/eval.md has the formulas).
 * A trial *passed* when its reward is 1; a trial without a reward (infra_error after its retries)
 * is not a sample and counts in neither n nor c.
 */

/**
 * Unbiased pass@k (Chen et al. 2021): the chance that at least one of k trials drawn without
 * replacement from the n run passes, 1 − C(n−c, k) / C(n, k). Null when k > n (not estimable).
 */
export function passAtK(n: number, c: number, k: number): number | null {
  checkCounts(n, c, k);
  if (k > n) return null;
  if (n - c < k) return 1;
  // 1 − Π_{i=n−c+1..n} (1 − k/i): the ratio of binomials without overflow
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** Unbiased pass^k: the chance that k trials drawn without replacement all pass, C(c, k) / C(n, k). */
export function passHatK(n: number, c: number, k: number): number | null {
  checkCounts(n, c, k);
  if (k > n) return null;
  if (c < k) return 0;
  let p = 1;
  for (let i = 0; i < k; i++) p *= (c - i) / (n - i);
  return p;
}

/** Plug-in pass@k, 1 − (1 − p̂)^k with p̂ = c/n: biased for small n (labelled as such in reports). */
export function pluginPassAtK(n: number, c: number, k: number): number | null {
  checkCounts(n, c, k);
  return n === 0 ? null : 1 - (1 - c / n) ** k;
}

/** Plug-in pass^k, p̂^k with p̂ = c/n. */
export function pluginPassHatK(n: number, c: number, k: number): number | null {
  checkCounts(n, c, k);
  return n === 0 ? null : (c / n) ** k;
}

/** Wilson score interval for c successes in n trials (z = 1.96: 95 %); n = 0 gives [0, 1]. */
export function wilson(c: number, n: number, z = 1.96): { low: number; high: number } {
  checkCounts(n, c, 1);
  if (n === 0) return { low: 0, high: 1 };
  const p = c / n;
  const z2 = z * z;
  const center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, center - half), high: Math.min(1, center + half) };
}

function checkCounts(n: number, c: number, k: number): void {
  const ok =
    Number.isInteger(n) && Number.isInteger(c) && Number.isInteger(k) && n >= 0 && c >= 0 && c <= n && k >= 1;
  if (!ok) throw new RangeError(`bad counts: n=${n}, c=${c}, k=${k} (need 0 ≤ c ≤ n, k ≥ 1)`);
}

export const Status = z
  .enum(["PASS", "FLAKY", "FAIL", "NO_DATA"])
  .describe("PASS: every trial passed; FAIL: none did; FLAKY: some did; NO_DATA: no trial got a reward");
export type Status = z.infer<typeof Status>;

/** PASS / FLAKY / FAIL of c passes in n scored trials. */
export function statusOf(n: number, c: number): Status {
  if (n === 0) return "NO_DATA";
  if (c === n) return "PASS";
  return c === 0 ? "FAIL" : "FLAKY";
}

export const Interval = z.object({ low: z.number(), high: z.number() }).strict();

export const PassK = z
  .object({
    k: z.number().int().min(1),
    passAtK: z.number().nullable().describe("unbiased pass@k, 1 − C(n−c,k)/C(n,k); null when k > n"),
    passHatK: z.number().nullable().describe("unbiased pass^k, C(c,k)/C(n,k); null when k > n"),
    pluginPassAtK: z.number().nullable().describe("plug-in estimate 1 − (1 − c/n)^k (biased for small n)"),
    pluginPassHatK: z.number().nullable().describe("plug-in estimate (c/n)^k"),
  })
  .strict();
export type PassK = z.infer<typeof PassK>;

/** The pass-rate figures of c passes in n scored trials (k = 1..n). */
export const PassStats = z
  .object({
    n: z.number().int().describe("trials with a reward (infra errors excluded)"),
    c: z.number().int().describe("trials that passed (reward 1)"),
    pass1: z.number().nullable().describe("c/n (pass@1); null when n = 0"),
    wilson95: Interval.describe("Wilson 95 % interval of the pass rate"),
    status: Status,
    k: z.array(PassK).describe("pass@k and pass^k for k = 1..n"),
  })
  .strict();
export type PassStats = z.infer<typeof PassStats>;

export function passStats(n: number, c: number): PassStats {
  const k: PassK[] = [];
  for (let i = 1; i <= n; i++) {
    k.push({
      k: i,
      passAtK: passAtK(n, c, i),
      passHatK: passHatK(n, c, i),
      pluginPassAtK: pluginPassAtK(n, c, i),
      pluginPassHatK: pluginPassHatK(n, c, i),
    });
  }
  return { n, c, pass1: n === 0 ? null : c / n, wilson95: wilson(c, n), status: statusOf(n, c), k };
}

/**
 * Pooled figures of several items (per policy): the mean over items of each item's pass@k
 * (k ≤ the smallest n, so every item contributes), and the item statuses counted.
 */
export const PooledStats = z
  .object({
    items: z.number().int(),
    n: z.number().int().describe("scored trials over every item"),
    c: z.number().int().describe("passed trials over every item"),
    pass1: z.number().nullable().describe("mean over items of c/n (items without data left out)"),
    wilson95: Interval.describe("Wilson 95 % interval of the pooled pass rate c/n"),
    passAtK: z
      .array(z.object({ k: z.number().int(), passAtK: z.number(), passHatK: z.number() }).strict())
      .describe("mean over items of unbiased pass@k and pass^k, for k up to the smallest n"),
    statuses: z.partialRecord(Status, z.number().int()).describe("how many items ended in each status"),
  })
  .strict();
export type PooledStats = z.infer<typeof PooledStats>;

export function poolStats(items: readonly PassStats[]): PooledStats {
  const withData = items.filter((s) => s.n > 0);
  const n = items.reduce((a, s) => a + s.n, 0);
  const c = items.reduce((a, s) => a + s.c, 0);
  const kMax = withData.length ? Math.min(...withData.map((s) => s.n)) : 0;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const passK = [];
  for (let k = 1; k <= kMax; k++) {
    passK.push({
      k,
      passAtK: mean(withData.map((s) => s.k[k - 1]!.passAtK!)),
      passHatK: mean(withData.map((s) => s.k[k - 1]!.passHatK!)),
    });
  }
  const statuses: Partial<Record<Status, number>> = {};
  for (const s of items) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  return {
    items: items.length,
    n,
    c,
    pass1: withData.length ? mean(withData.map((s) => s.c / s.n)) : null,
    wilson95: wilson(c, n),
    passAtK: passK,
    statuses: statuses as Record<Status, number>,
  };
}

/** One hidden test's flakiness over the scorings that ran it (`--test-repeat` runs on one diff each). */
export const TestFlake = z
  .object({
    item: z.string(),
    test: z.string(),
    scorings: z.number().int().describe("scorings that ran the test"),
    flaky: z.number().int().describe("scorings in which the test both passed and failed across its repeats"),
    rate: z.number().describe("flaky / scorings"),
  })
  .strict();
export type TestFlake = z.infer<typeof TestFlake>;

/** What one scoring says about its hidden tests: the ids it ran and those that flipped between repeats. */
export interface ScoringTests {
  readonly item: string;
  readonly tests: readonly string[];
  readonly flaky: readonly string[];
}

/** Per hidden test, how often it flipped on a fixed diff: the environment's flakiness, apart from the agent's. */
export function testFlakeRates(scorings: readonly ScoringTests[]): TestFlake[] {
  const by = new Map<string, { item: string; test: string; scorings: number; flaky: number }>();
  for (const s of scorings) {
    const flaky = new Set(s.flaky);
    for (const test of new Set([...s.tests, ...s.flaky])) {
      const key = JSON.stringify([s.item, test]);
      const e = by.get(key) ?? { item: s.item, test, scorings: 0, flaky: 0 };
      e.scorings++;
      if (flaky.has(test)) e.flaky++;
      by.set(key, e);
    }
  }
  return [...by.values()]
    .map((e) => ({ ...e, rate: e.flaky / e.scorings }))
    .sort((a, b) => b.rate - a.rate || a.item.localeCompare(b.item) || a.test.localeCompare(b.test));
}

/**
 * A pass rate that dropped from the baseline, judged by a one-sided two-proportion z-test on the
 * pooled trials (pooled variance). `z` ≥ 1.645 is significant at 5 %; below `minN` trials on
 * either side nothing is called a regression.
 */
export function regressionTest(
  base: { n: number; c: number },
  now: { n: number; c: number },
  o: { zCrit?: number; minN?: number } = {},
): { z: number | null; regressed: boolean } {
  const zCrit = o.zCrit ?? 1.645;
  const minN = o.minN ?? 3;
  if (base.n < minN || now.n < minN) return { z: null, regressed: false };
  const p1 = base.c / base.n;
  const p2 = now.c / now.n;
  const p = (base.c + now.c) / (base.n + now.n);
  const se = Math.sqrt(p * (1 - p) * (1 / base.n + 1 / now.n));
  if (se === 0) return { z: null, regressed: false };
  const z = (p1 - p2) / se;
  return { z, regressed: z >= zCrit };
}
