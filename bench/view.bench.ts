/**
 * `npm run bench -- view [--trajectories N] [--keep]`: a generated run of 10 000 trajectories
 * (~1 GB of files, token data included) and
 * - the first rendered run table in Chromium from the `flakegym view` command (process start to
 *   rows on screen), and from page open against the naive viewer a script would be (load every
 *   trajectory's files, then render every row);
 * - the first token view (cold: groups.jsonl not indexed yet), page open to trained tokens shown;
 * - `flakegym view --export`: its peak RSS (GNU time) and time, and a SIGTERM mid-export (time to
 *   exit, no file left).
 * Its last line: `view: first-table-from-command <s> s, export-rss <MiB> MiB, token-view-first <s> s`.
 */
import { spawn } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { OutcomeKind } from "../packages/cline-vendor/src/index.js";
import { RunSummary } from "../packages/runner/src/rollout/summary.js";
import { startViewServer } from "../packages/runner/src/view/server.js";
import { CHROMIUM, launchBrowser, NO_CHROMIUM_REASON, openPage } from "../tests/utils/src/browser.js";
import { REPO_ROOT } from "../tests/utils/src/repo-root.js";
import { type BenchContext, printTable } from "./lib.js";

const GROUP = 10;

function manifest(tasks: string[]) {
  return {
    version: 1,
    runId: "bench-view",
    createdAt: new Date().toISOString(),
    config: {
      tasks,
      groupSize: GROUP,
      policies: ["gold", "empty"],
      concurrency: 2,
      maxInfraRetries: 2,
      seed: 0,
      partialCredit: "none",
      weights: { tests: 1, build: 0, lint: 0, judge: 0 },
      testRepeat: 1,
      segments: "last",
      backend: "local",
      limits: { maxTurns: 50, timeoutMs: 1_200_000, testTimeoutMs: 600_000 },
    },
    provenance: { flakegymVersion: "0.1.0", cline: { version: "1.0.10" }, node: process.version },
    tasks: {},
  };
}

/** Writes the run: ~100 KB per trajectory (three turn-log lines resending the chat, a diff, results). */
export async function generate(dir: string, n: number): Promise<number> {
  const tasks = Array.from({ length: Math.ceil(n / GROUP) }, (_, i) => `task-${String(i).padStart(5, "0")}`);
  await mkdir(join(dir, "trajectories"), { recursive: true });
  await writeFile(join(dir, "run.json"), JSON.stringify(manifest(tasks)));
  const filler = "x".repeat(24 * 1024);
  let bytes = 0;
  const metrics: string[] = [];
  for (let i = 0; i < n; i++) {
    const task = tasks[Math.floor(i / GROUP)]!;
    const id = `${task}-t${i % GROUP}`;
    const reward = (i * 7) % 3 === 0 ? 1 : 0;
    const t = join(dir, "trajectories", id);
    await mkdir(t, { recursive: true });
    const turn = (seq: number) =>
      JSON.stringify({
        v: 1,
        trajectoryId: id,
        seq,
        startedAt: "2026-11-23T10:00:00Z",
        protocol: "openai",
        stream: true,
        upstream: "gold",
        status: "ok",
        request: {
          model: "m",
          messages: [
            { role: "system", content: filler },
            { role: "user", content: `task ${task}` },
          ],
        },
        response: {
          text: "<attempt_completion>\n<result>done</result>\n</attempt_completion>",
          toolCalls: [],
          finishReason: "stop",
        },
        latency: { firstByteMs: 5, totalMs: 10 },
      });
    const files: [string, string][] = [
      ["turns.jsonl", `${turn(1)}\n${turn(2)}\n`],
      ["diff.patch", `diff --git a/x.js b/x.js\n--- a/x.js\n+++ b/x.js\n@@ -1 +1 @@\n-a\n+b${i}\n`],
      [
        "score.json",
        JSON.stringify({
          reward,
          terms: [{ name: "tests", weight: 1, value: reward }],
          flaky: [],
          touchedTestFiles: [],
          diffBytes: 40,
          durationMs: 300,
        }),
      ],
      ["result.json", JSON.stringify({ trajectoryId: id, taskId: task, index: i % GROUP, reward })],
    ];
    for (const [f, text] of files) {
      await writeFile(join(t, f), text);
      bytes += text.length;
    }
    metrics.push(
      JSON.stringify({
        task_id: task,
        trajectory_id: id,
        snapshot_ms: 200,
        fork_ms: 30,
        boot_ms: 3000 + (i % 500),
        agent_ms: 1000 + (i % 900),
        score_ms: 400,
        boot_ok: true,
        outcome: "completed",
        outcome_detail: "the agent attempted completion",
        reward,
        turns: 3,
        tokens_in: 30000,
        tokens_out: 400,
        infra_retries: 0,
      }),
    );
  }
  const m = `${metrics.join("\n")}\n`;
  await writeFile(join(dir, "metrics.jsonl"), m);
  // a finished run (its per-task list left out: the page reads only the totals)
  const summary = RunSummary.parse({
    runId: "bench-view",
    out: dir,
    complete: true,
    interrupted: false,
    durationMs: 3_600_000,
    trajectories: {
      expected: n,
      finished: n,
      infraRetries: 0,
      outcomes: { ...Object.fromEntries(OutcomeKind.options.map((k) => [k, 0])), completed: n },
      limits: {},
    },
    meanReward: 1 / 3,
    tasks: [],
  });
  await writeFile(join(dir, "summary.json"), JSON.stringify(summary));
  return bytes + m.length + (await writeGroups(dir, tasks));
}

/** Prompt (masked) and completion (trained) tokens of each exported sequence. */
const PROMPT_TOKENS = 3000;
const TRAINED_TOKENS = 300;

/** groups.jsonl: one Atropos group line per task, a token sequence per trajectory. */
async function writeGroups(dir: string, tasks: readonly string[]): Promise<number> {
  const out = createWriteStream(join(dir, "groups.jsonl"));
  let bytes = 0;
  const seq = (i: number) => {
    const tokens = Array.from(
      { length: PROMPT_TOKENS + TRAINED_TOKENS },
      (_, k) => 1000 + ((k * 31 + i) % 50000),
    );
    return {
      tokens,
      masks: tokens.map((t, k) => (k < PROMPT_TOKENS ? -100 : t)),
      logprobs: tokens.map((_, k) => (k < PROMPT_TOKENS ? 1 : -((k % 97) / 40))),
    };
  };
  for (const task of tasks) {
    const seqs = Array.from({ length: GROUP }, (_, i) => seq(i));
    const line = `${JSON.stringify({
      group_overrides: { group_id: `g-${task}`, task_id: task },
      tokens: seqs.map((x) => x.tokens),
      masks: seqs.map((x) => x.masks),
      scores: seqs.map((_, i) => (i % 3 === 0 ? 1 : 0)),
      inference_logprobs: seqs.map((x) => x.logprobs),
      overrides: seqs.map((_, i) => ({ trajectory_id: `${task}-t${i}` })),
    })}\n`;
    bytes += line.length;
    if (!out.write(line)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
  return bytes;
}

const CLI = join(REPO_ROOT, "packages/runner/bin/flakegym.js");

/** Starts `flakegym view <dir>` and resolves with its URL once printed (and a way to stop it). */
function startViewCommand(dir: string, env: NodeJS.ProcessEnv): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [CLI, "view", dir], { stdio: ["ignore", "pipe", "pipe"], env });
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(
      () => reject(new Error(`flakegym view printed no URL in 60 s: ${text}`)),
      60_000,
    );
    child.stdout.on("data", (c: Buffer) => {
      text += c.toString();
      const url = /http:\/\/127\.0\.0\.1:\d+\/\?t=\S+/.exec(text)?.[0];
      if (url) {
        clearTimeout(timer);
        resolve({ url, stop: () => child.kill("SIGTERM") });
      }
    });
    child.once("exit", (code) => reject(new Error(`flakegym view exited ${code}: ${text}`)));
  });
}

/** `flakegym view <dir> --export <out>` under GNU time: wall seconds and peak RSS (MiB). */
async function timeExport(
  dir: string,
  out: string,
  env: NodeJS.ProcessEnv,
): Promise<{ s: number; rssMiB: number; bytes: number }> {
  const start = performance.now();
  const child = spawn(
    "/usr/bin/time",
    ["-f", "maxrss-kib %M", process.execPath, CLI, "view", dir, "--export", out],
    { stdio: ["ignore", "ignore", "pipe"], env },
  );
  let err = "";
  child.stderr.on("data", (c: Buffer) => {
    err += c.toString();
  });
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  const kib = Number(/maxrss-kib (\d+)/.exec(err)?.[1]);
  if (code !== 0 || !kib) throw new Error(`export failed (exit ${code}): ${err.slice(-2000)}`);
  return { s: (performance.now() - start) / 1000, rssMiB: kib / 1024, bytes: (await stat(out)).size };
}

/** SIGTERM `flakegym view --export` after `afterMs`: seconds until it exited, and whether a file was left. */
async function cancelExport(dir: string, out: string, afterMs: number, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [CLI, "view", dir, "--export", out], { stdio: "ignore", env });
  await new Promise((r) => setTimeout(r, afterMs));
  const sent = performance.now();
  child.kill("SIGTERM");
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  const left =
    existsSync(out) || (await readdir(join(out, "..")).then((fs) => fs.some((f) => f.includes(".tmp"))));
  return { s: (performance.now() - sent) / 1000, code, left };
}

/** The naive viewer: read and parse every file of every trajectory, then render every row. */
async function startNaive(dir: string) {
  const server = createServer(async (req, res) => {
    if (req.url === "/") {
      res.end(`<!doctype html><table id=t><tbody></tbody></table><script>
        fetch('/all').then(r => r.json()).then(rows => { const tb = document.querySelector('tbody');
          for (const r of rows) { const tr = document.createElement('tr');
            for (const v of [r.id, r.reward, r.turns, r.diff.length]) { const td = document.createElement('td'); td.textContent = String(v); tr.appendChild(td); }
            tb.appendChild(tr); } });</script>`);
      return;
    }
    const rows = [];
    for (const id of await readdir(join(dir, "trajectories"))) {
      const t = join(dir, "trajectories", id);
      const result = JSON.parse(await readFile(join(t, "result.json"), "utf8"));
      const score = JSON.parse(await readFile(join(t, "score.json"), "utf8"));
      const turns = (await readFile(join(t, "turns.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      const diff = await readFile(join(t, "diff.patch"), "utf8");
      rows.push({ id, reward: score.reward ?? result.reward, turns: turns.length, diff });
    }
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(rows));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close() };
}

/**
 * From `flakegym view <dir>` started to the first table, then the first token view on that server.
 * `env` picks how the command runs: from its cached bundle (a private cache: cold on first use, then
 * warm) or from source through tsx (`FLAKEGYM_VIEW_FROM_SOURCE=1`, how every start ran before).
 */
async function firstTableAndTokens(
  browser: Awaited<ReturnType<typeof launchBrowser>>,
  dir: string,
  env: NodeJS.ProcessEnv,
) {
  const { page } = await openPage(browser);
  page.setDefaultTimeout(600_000);
  const start = performance.now();
  const cmd = await startViewCommand(dir, env);
  try {
    await page.goto(`${cmd.url}#/run/.`);
    await page.waitForSelector("table.trajectories tbody tr");
    const tableS = (performance.now() - start) / 1000;
    const rows = await page.locator("table.trajectories tbody tr").count();
    const id = await page.locator("table.trajectories tbody tr th a").nth(37).textContent();
    const t0 = performance.now();
    await page.evaluate(`location.hash = ${JSON.stringify(`#/t/./${id}/tokens`)}`);
    await page.waitForSelector(".tokens .tk.trained");
    const tokensS = (performance.now() - t0) / 1000;
    return { tableS, rows, tokensS };
  } finally {
    cmd.stop();
    await page.context().close();
  }
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  if (!CHROMIUM) {
    console.log(`view bench skipped: ${NO_CHROMIUM_REASON}`);
    return;
  }
  const n = Number(args[args.indexOf("--trajectories") + 1] ?? 10_000) || 10_000;
  const dir = join(tmpdir(), `flakegym-bench-view-${n}`);
  await rm(dir, { recursive: true, force: true });
  const t0 = performance.now();
  const bytes = await generate(dir, n);
  console.log(
    `generated ${n} trajectories, ${(bytes / 1e9).toFixed(2)} GB in ${((performance.now() - t0) / 1000).toFixed(1)} s at ${dir}`,
  );
  const browser = await launchBrowser();
  const results: Record<string, string | number>[] = [];
  try {
    const timeTo = async (url: string, selector: string) => {
      const { page } = await openPage(browser);
      page.setDefaultTimeout(600_000);
      const start = performance.now();
      await page.goto(url);
      await page.waitForSelector(selector);
      const ms = performance.now() - start;
      const rows = await page.locator(`${selector.split(" tbody")[0]} tbody tr`).count();
      await page.context().close();
      return { ms, rows };
    };
    const view = await startViewServer({ dir });
    const naive = await startNaive(dir);
    try {
      const url = `${view.url}#/run/.`;
      // the API alone, on a server of its own (its cache stays out of the page's measurement)
      const apiServer = await startViewServer({ dir });
      const apiStart = performance.now();
      const api = await fetch(`http://127.0.0.1:${apiServer.port}/api/run?run=`, {
        headers: { "x-flakegym-token": apiServer.token },
      });
      const apiBytes = (await api.text()).length;
      const apiMs = performance.now() - apiStart;
      await apiServer.close();
      results.push({
        viewer: `flakegym view: /api/run alone (${apiBytes} bytes)`,
        ms: Math.round(apiMs),
        rows: 100,
      });
      const cold = await timeTo(url, "table.trajectories tbody tr");
      results.push({ viewer: "flakegym view (first open)", ms: Math.round(cold.ms), rows: cold.rows });
      const base = await timeTo(naive.url, "#t tbody tr");
      results.push({ viewer: "naive: load every file", ms: Math.round(base.ms), rows: base.rows });
      const warm = await timeTo(url, "table.trajectories tbody tr");
      results.push({ viewer: "flakegym view (again)", ms: Math.round(warm.ms), rows: warm.rows });
      const cacheDir = join(tmpdir(), `flakegym-bench-view-cache-${process.pid}`);
      const env = { ...process.env, FLAKEGYM_CACHE: cacheDir };
      const fromSource = await firstTableAndTokens(browser, dir, { ...env, FLAKEGYM_VIEW_FROM_SOURCE: "1" });
      results.push({
        viewer: "flakegym view: command → first table, from source (tsx)",
        ms: Math.round(fromSource.tableS * 1000),
        rows: fromSource.rows,
      });
      const coldCache = await firstTableAndTokens(browser, dir, env);
      results.push({
        viewer: "flakegym view: command → first table, bundle built (first use)",
        ms: Math.round(coldCache.tableS * 1000),
        rows: coldCache.rows,
      });
      const fromCommand = await firstTableAndTokens(browser, dir, env);
      results.push({
        viewer: "flakegym view: command → first table (cached bundle)",
        ms: Math.round(fromCommand.tableS * 1000),
        rows: fromCommand.rows,
      });
      results.push({
        viewer: "flakegym view: first token view (cold)",
        ms: Math.round(fromCommand.tokensS * 1000),
        rows: 0,
      });
      printTable(results);
      console.log(`(load average ${loadavg()[0]!.toFixed(1)} on this machine while measuring)`);
      const ratio = base.ms / cold.ms;
      console.log(
        `\nfirst rendered table: flakegym view ${Math.round(cold.ms)} ms vs naive ${Math.round(base.ms)} ms — ${ratio.toFixed(1)}x faster; under 2 s: ${cold.ms < 2000 ? "yes" : "NO"}`,
      );
      console.log(
        `first table from the command: cached bundle ${fromCommand.tableS.toFixed(2)} s vs from source ${fromSource.tableS.toFixed(2)} s — ${(fromSource.tableS / fromCommand.tableS).toFixed(1)}x; first use (bundle built) ${coldCache.tableS.toFixed(2)} s; under 2 s: ${fromCommand.tableS < 2 ? "yes" : "NO"}`,
      );
      const out = join(tmpdir(), `flakegym-bench-view-export-${process.pid}`);
      await mkdir(out, { recursive: true });
      const exp = await timeExport(dir, join(out, "run.html"), env);
      console.log(
        `export: ${exp.s.toFixed(1)} s, peak RSS ${exp.rssMiB.toFixed(0)} MiB, ${(exp.bytes / 1e6).toFixed(0)} MB file`,
      );
      await rm(join(out, "run.html"), { force: true });
      const cancel = await cancelExport(dir, join(out, "run.html"), Math.min(5000, (exp.s * 1000) / 3), env);
      console.log(
        `export SIGTERM: exited ${cancel.code} in ${cancel.s.toFixed(2)} s; file or temporary left: ${cancel.left ? "YES" : "no"}`,
      );
      await rm(out, { recursive: true, force: true });
      await rm(cacheDir, { recursive: true, force: true });
      ctx.writeResult("view", {
        trajectories: n,
        bytes,
        results,
        ratio,
        fromCommand,
        fromSource,
        coldCache,
        export: exp,
        cancel,
        loadavg: loadavg()[0],
      });
      console.log(
        `view: first-table-from-command ${fromCommand.tableS.toFixed(2)} s, export-rss ${exp.rssMiB.toFixed(0)} MiB, token-view-first ${fromCommand.tokensS.toFixed(2)} s`,
      );
    } finally {
      await view.close();
      naive.close();
    }
  } finally {
    await browser.close();
    if (!args.includes("--keep")) await rm(dir, { recursive: true, force: true });
  }
}
