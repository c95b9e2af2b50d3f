import { createReadStream } from "node:fs";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, normalize } from "node:path";
import { buildReport, EvalReport, startViewServer, type TrialRow, writeExport } from "@flakegym/runner";
import {
  CHROMIUM,
  launchBrowser,
  makeTempDir,
  NO_CHROMIUM_REASON,
  openPage,
  runCli,
  screenshot,
  type TempDir,
} from "@flakegym/test-utils";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `flakegym eval` end to end: the real CLI, the real Cline core in bubblewrap workers, scoring by
 * the scenario's checks in fresh sandboxes. One smoke scenario (create-file, the fastest) × three
 * policies — gold (passes), empty (fails) and a scripted plan with per-trial plans (passes trials
 * 0 and 2, gives up on 1: FLAKY for real) — × 3 trials; a baseline in which `empty` passed makes
 * the run exit 1 naming the regression. The HTML report is opened in real Chromium, as a file and
 * from a local server.
 */

let tmp: TempDir;
let out: string;
let run: Awaited<ReturnType<typeof runCli>>;
let report: EvalReport;
let mixed: string;
/** A second eval started on the same --out while the first runs. */
let second: Awaited<ReturnType<typeof runCli>> | string;

/**
 * Once the running eval holds its directory (its run.lock is there, within 120 s), starts a second
 * eval with the same --out; its result, or why it could not be started.
 */
async function secondEvalOnSameOut(dir: string): Promise<Awaited<ReturnType<typeof runCli>> | string> {
  const until = Date.now() + 120_000;
  while (!(await stat(join(dir, "run.lock")).catch(() => undefined))) {
    if (Date.now() > until) return `no ${join(dir, "run.lock")} within 120 s of starting the first eval`;
    await new Promise((r) => setTimeout(r, 100));
  }
  return await runCli(["eval", "--scenario", "create-file", "--policy", "gold", "--out", dir], {
    timeoutMs: 60_000,
  });
}

/** A baseline report in which every policy passed every trial of create-file (input, not a result). */
async function writeBaseline(file: string, policies: string[]): Promise<void> {
  const trials: TrialRow[] = policies.flatMap((policy) =>
    [0, 1, 2].map((trial) => ({
      item: "create-file",
      policy,
      trial,
      trajectoryId: `create-file-t${trial}`,
      outcome: "completed" as const,
      detail: "baseline",
      reward: 1,
      passed: true,
      checks: {},
      flakyTests: [],
      turns: 1,
      toolCalls: 1,
      tokensIn: 0,
      tokensOut: 0,
      phases: { snapshotMs: 0, forkMs: 0, bootMs: 0, agentMs: 0, scoreMs: 0 },
      infraRetries: 0,
      links: { log: "x.log", dir: "x", diff: "x/diff.patch" },
    })),
  );
  const r = buildReport({
    evalId: "baseline",
    createdAt: new Date(0).toISOString(),
    durationMs: 0,
    complete: true,
    provenance: {
      flakegymVersion: "0",
      cline: { version: "1.0.10" },
      node: process.version,
      runId: "baseline",
      seed: 0,
      trials: 3,
      testRepeat: 1,
      concurrency: 1,
      backend: "local",
      snapshotKeys: {},
    },
    items: [{ id: "create-file", kind: "scenario", source: "baseline" }],
    policies: policies.map((spec, i) => ({ spec, label: `p${i}` })),
    trials,
    itemErrors: [],
  });
  await writeFile(file, JSON.stringify(r));
}

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-eval-");
  mixed = join(tmp.path, "mixed.json");
  await writeFile(
    mixed,
    JSON.stringify({
      version: 1,
      description: "create-file: passes trials 0 and 2, gives up on trial 1",
      trials: [
        {
          turns: [
            {
              tool_calls: [
                { name: "write_to_file", arguments: { path: "hello.txt", content: "Hello, flakegym!" } },
              ],
            },
            { tool_calls: [{ name: "attempt_completion", arguments: { result: "created hello.txt" } }] },
          ],
        },
        { turns: [{ tool_calls: [{ name: "attempt_completion", arguments: { result: "nothing done" } }] }] },
      ],
    }),
  );
  const policies = ["gold", "empty", `scripted:${mixed}`];
  const baseline = join(tmp.path, "baseline.json");
  await writeBaseline(baseline, policies);
  out = join(tmp.path, "evals", "e1");
  const stepSummary = join(tmp.path, "step-summary.md");
  await writeFile(stepSummary, "previous step\n");
  const first = runCli(
    [
      "eval",
      "--scenario",
      "create-file",
      ...policies.flatMap((p) => ["--policy", p]),
      "--trials",
      "3",
      // nine trials in two waves instead of three: a trial spends much of its time waiting (boot,
      // sandbox setup, scoring), so five at once beat three here (measured 47 s vs 56 s)
      "--concurrency",
      "5",
      "--baseline",
      baseline,
      "--out",
      out,
    ],
    { timeoutMs: 500_000, env: { ...process.env, FLAKEGYM_POLICY: "", GITHUB_STEP_SUMMARY: stepSummary } },
  );
  second = await secondEvalOnSameOut(out);
  run = await first;
  const text = await readFile(join(out, "report.json"), "utf8").catch(() => "");
  if (!text) throw new Error(`no report.json (exit ${run.exitCode}): ${run.stderr.slice(-3000)}`);
  report = EvalReport.parse(JSON.parse(text));
}, 520_000);

afterAll(async () => {
  await tmp?.cleanup();
});

describe("flakegym eval (real core, smoke scenario × gold / empty / mixed × 3 trials)", () => {
  it("statuses: gold PASS 3/3, empty FAIL 0/3, the per-trial plan FLAKY 2/3 (trial 1 failed)", () => {
    const cell = (p: string) => report.cells.find((c) => c.item === "create-file" && c.policy === p)!.stats;
    expect(cell("gold")).toMatchObject({ status: "PASS", n: 3, c: 3 });
    expect(cell("empty")).toMatchObject({ status: "FAIL", n: 3, c: 0 });
    expect(cell(`scripted:${mixed}`)).toMatchObject({ status: "FLAKY", n: 3, c: 2 });
    // unbiased pass@3 of 2/3 is 1; pass^2 is 1/3
    expect(cell(`scripted:${mixed}`).k[2]!.passAtK).toBe(1);
    expect(cell(`scripted:${mixed}`).k[1]!.passHatK).toBeCloseTo(1 / 3, 9);
    const mixedTrials = report.trials.filter((t) => t.policy === `scripted:${mixed}`);
    expect(mixedTrials.map((t) => [t.trial, t.passed])).toEqual([
      [0, true],
      [1, false],
      [2, true],
    ]);
    expect(report.provenance.cline.version).toBe("1.0.10");
    expect(report.provenance.snapshotKeys["create-file"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a second eval on the same --out while it runs is refused before it writes anything (E_RUN_LOCKED, exit 2)", () => {
    if (typeof second === "string") throw new Error(second);
    expect(second.exitCode, second.stderr).toBe(2);
    expect(second.stderr).toMatch(/E_RUN_LOCKED/);
    expect(second.stderr).toMatch(/pid \d+/);
    // the hint while the first runs: wait, or stop it and continue it as an eval (not "remove the lock")
    expect(second.stderr).toContain(`flakegym eval --resume ${out}`);
    // the first eval's report is whole: every trial of every policy (checked in detail below)
    expect(report.trials).toHaveLength(9);
  });

  it("exits 1 on the baseline regression of `empty` and names it in summary.md and $GITHUB_STEP_SUMMARY", async () => {
    expect(run.exitCode, run.stderr).toBe(1);
    expect(report.baseline?.regressions).toEqual(["empty", "create-file × empty"]);
    expect(run.stderr).toMatch(/regression vs .*baseline\.json: empty/);
    const md = await readFile(join(out, "summary.md"), "utf8");
    expect(md).toMatch(/\*\*Regression vs baseline\*\*.*`empty`/);
    expect(md).toMatch(/\| create-file \| PASS 3\/3 \| FAIL 0\/3 \| FLAKY 2\/3 \|/);
    const step = await readFile(join(tmp.path, "step-summary.md"), "utf8");
    expect(step.startsWith("previous step\n")).toBe(true);
    expect(step).toContain(md);
  });

  it("writes per-trial logs and dirs, keeps failed workspaces only, and nothing outside --out (no evals/latest)", async () => {
    for (const t of report.trials) {
      expect(await readFile(join(out, t.links.log), "utf8")).toContain(`outcome   ${t.outcome}`);
      expect((await stat(join(out, t.links.dir, "result.json"))).isFile()).toBe(true);
      expect(t.links.workspace !== undefined).toBe(!t.passed);
      if (t.links.workspace)
        expect((await stat(join(out, t.links.workspace, "README.md"))).isFile()).toBe(true);
    }
    expect(await readdir(join(tmp.path, "evals"))).toEqual(["e1"]);
  });

  it.skipIf(!CHROMIUM)(
    `report.html in real Chromium: charts present, no request leaves the page, works from a local server${CHROMIUM ? "" : ` (skipped: ${NO_CHROMIUM_REASON})`}`,
    async () => {
      const browser = await launchBrowser();
      let server: Server | undefined;
      try {
        const { page, requests } = await openPage(browser);
        await page.goto(`file://${join(out, "report.html")}`);
        for (const chart of ["heatmap", "passk-chart", "reward-chart", "duration-chart", "tokens-chart"]) {
          expect(await page.locator(`svg.${chart}`).count(), chart).toBe(1);
        }
        expect(await page.locator("svg.heatmap g.cell").count()).toBe(3);
        expect(await page.locator('svg.heatmap g.cell[data-status="FLAKY"]').count()).toBe(1);
        expect(await page.locator("table.trials tbody tr").count()).toBe(9);
        await page.fill("#filter", "empty");
        expect(await page.locator("table.trials tbody tr:visible").count()).toBe(3);
        await screenshot(page, "eval-report");
        expect(requests.filter((u) => !u.startsWith("file://"))).toEqual([]);
        expect(requests).toEqual([`file://${join(out, "report.html")}`]);

        // served: the relative links reach the trial files
        server = createServer((req, res) => {
          const rel = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
          const file = join(out, rel);
          if (!file.startsWith(out)) return void res.writeHead(403).end();
          stat(file).then(
            (s) => (s.isFile() ? createReadStream(file).pipe(res.writeHead(200)) : res.writeHead(404).end()),
            () => res.writeHead(404).end(),
          );
        });
        await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const served = await openPage(browser);
        await served.page.goto(`${base}/report.html`);
        expect(await served.page.locator("svg.heatmap").count()).toBe(1);
        const logLink = served.page.locator("table.trials a", { hasText: "log" }).first();
        await Promise.all([served.page.waitForURL(/trial-0\.log$/), logLink.click()]);
        expect(await served.page.textContent("body")).toContain("outcome");
        expect(served.requests.every((u) => u.startsWith(base))).toBe(true);
      } finally {
        await browser.close();
        await new Promise((r) => (server ? server.close(r) : r(undefined)));
      }
    },
  );

  it("score.json keeps why each failed check failed; report rows and trial logs say it", async () => {
    const failed = report.trials.find((t) => t.policy === "empty")!;
    const score = JSON.parse(await readFile(join(out, failed.links.dir, "score.json"), "utf8")) as {
      testOutput?: Record<string, string>;
    };
    const [name, output] = Object.entries(score.testOutput ?? {})[0] ?? [];
    expect(name, "a failed check has its output").toBeDefined();
    expect(output).toContain("must exist as a regular file");
    expect(Buffer.byteLength(output!)).toBeLessThanOrEqual(4096);
    expect(failed.failures?.[0]?.message).toContain("must exist as a regular file");
    expect(await readFile(join(out, failed.links.log), "utf8")).toContain("must exist as a regular file");
    // the decoys' random names never show under a graded test's name
    const graded = new Set(Object.keys(failed.checks));
    for (const n of Object.keys(score.testOutput ?? {})) expect(graded.has(n)).toBe(true);
  });

  it.skipIf(!CHROMIUM)(
    `flakegym view over the eval dir and its export: a failing heat-map cell opens the trial's page at its failing assertion${CHROMIUM ? "" : ` (skipped: ${NO_CHROMIUM_REASON})`}`,
    async () => {
      const browser = await launchBrowser();
      const server = await startViewServer({ dir: out });
      try {
        const { page } = await openPage(browser);
        let seq = 0;
        const ready = async () => page.waitForSelector(`#app[data-ready="${++seq}"]`);
        await page.goto(server.url);
        await ready();
        // the index names the eval (not '.') with its numbers, and opens it
        const evalLink = page.locator('a[href="#/eval/."]');
        expect(await evalLink.textContent()).toBe(report.evalId);
        expect(await page.locator("text=pass@1").count()).toBeGreaterThan(0);
        await screenshot(page, "view-eval-index");
        await evalLink.click();
        await ready();
        await checkDrillDown(page, ready, "view-eval");

        // the single-file export: the same click path, nothing leaves the page
        const file = join(tmp.path, "eval-export.html");
        await writeExport(out, file);
        const exported = await openPage(browser);
        seq = 0;
        const readyX = async () => exported.page.waitForSelector(`#app[data-ready="${++seq}"]`);
        await exported.page.goto(`file://${file}#/eval/.`);
        await readyX();
        await checkDrillDown(exported.page, readyX, "view-eval-export");
        expect(exported.requests.filter((u) => !u.startsWith("file://"))).toEqual([]);
      } finally {
        await server.close();
        await browser.close();
      }
    },
  );
});

/** In the eval page: the empty policy's FAIL cell → its trial's page, scrolled to the failing test. */
async function checkDrillDown(page: Page, ready: () => Promise<unknown>, shot: string): Promise<void> {
  const frame = page.frameLocator("iframe.report");
  const cell = frame.locator('svg.heatmap a:has(g.cell[data-status="FAIL"])').first();
  await cell.click();
  await ready();
  expect(page.url()).toMatch(/#\/t\/run\/create-file-t\d+\?at=tests$/);
  const assertion = page.locator("#tests tr.test-failed .assertion").first();
  expect(await assertion.textContent()).toContain("must exist as a regular file");
  expect(await page.locator(".outcome.tone-bad").count()).toBeGreaterThan(0);
  expect(await page.textContent("main")).not.toContain("still running");
  await screenshot(page, `${shot}-trial`);
  // a trial row's 'why' cell says it too, and a click on the row's diff link opens the same page
  await page.goBack();
  await ready();
  const row = frame.locator("table.trials tr.fail").first();
  expect(await row.locator("td.why").textContent()).toContain("must exist as a regular file");
  await row.locator("a", { hasText: "diff" }).click();
  await ready();
  expect(await page.locator("h2#diff-h").count()).toBe(1);
}
