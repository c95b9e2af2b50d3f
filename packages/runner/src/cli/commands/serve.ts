import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { loadChatTokenizer } from "../../export/tokenizer.js";
import { formatSweepResult, sweepLeftovers } from "../../gc/sweep.js";
import { RolloutOptions } from "../../rollout/options.js";
import { checkOutDir } from "../../rollout/out-path.js";
import { createRolloutDeps } from "../../rollout/wire.js";
import { DEFAULT_MAX_GROUPS, serveMaxGroups, startServe } from "../../serve/server.js";
import { checkAllowedUpstreams, withoutModelKeys } from "../../serve/upstream-allow.js";
import { poolHelp, resolvePool } from "../../workers/pool/decisions.js";
import { defineCommand } from "../command.js";

export const serveCommand = defineCommand({
  path: ["serve"],
  summary: "an environment server for trainers: POST a group, read scored trajectories back as NDJSON",
  details:
    "Trainers POST /v1/groups (a catalog task, SWE-bench-style rows or a scenario, a group size, their own\n" +
    "OpenAI-compatible endpoint, model and sampling parameters, a request id); flakegym runs the group as `rollout` does and streams each finished\n" +
    "trajectory (token ids, loss mask, logprobs, reward and breakdown, outcome, timings, segments,\n" +
    "provenance). GET /v1/schema: the API as JSON Schema. A request id never runs twice; finished groups are\n" +
    "answered from --state-dir after a restart. Off loopback, FLAKEGYM_SERVE_TOKEN is required and every\n" +
    "request must send Authorization: Bearer <token>. SIGINT, SIGTERM or SIGHUP stops it cleanly: exit 0 when\n" +
    "no group was running, 130 when some stopped unfinished (resubmitted, they resume).\n" +
    "Python adapters: adapters/python (docs/reference/trainers.md).",
  options: z.object({
    host: z
      .string()
      .default("127.0.0.1")
      .describe("address to listen on (off loopback needs FLAKEGYM_SERVE_TOKEN)"),
    port: z.number().int().min(0).max(65535).default(8470).describe("port (0: any free port, printed)"),
    stateDir: z
      .string()
      .default("serve-state")
      .describe("where requests, runs and streamed records are kept"),
    tokenizer: z.string().describe("the policy model's Hugging Face tokenizer directory (token export)"),
    maxGroups: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        `groups running at once; more get 429 + Retry-After (default ${DEFAULT_MAX_GROUPS}; with --backend nomad 1)`,
      ),
    concurrency: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("workers one group runs at once (default: the number of CPUs)"),
    backend: z
      .enum(["local", "podman", "nomad"])
      .default("local")
      .describe(
        "where workers run, as rollout --backend (nomad: needs --gateway-advertise and FLAKEGYM_NOMAD_DRIVER=raw_exec, see docs/reference/nomad.md)",
      ),
    gatewayAdvertise: z
      .string()
      .optional()
      .describe(
        "with --backend nomad: host:port of this machine the Nomad allocations reach the policy gateway at (as rollout --gateway-advertise)",
      ),
    catalog: z.string().optional().describe("task catalog directory (default: the built-in catalog)"),
    reposDir: z
      .string()
      .optional()
      .describe(
        "directory of git repositories that requested dataset rows may name by a relative path (default: rows must name remote repositories)",
      ),
    pool: RolloutOptions.shape.pool.describe(poolHelp("serve")),
    poolIdle: RolloutOptions.shape.poolIdle,
    reuse: RolloutOptions.shape.reuse,
    allowUpstream: z
      .array(z.string())
      .default([])
      .describe(
        "an inference endpoint trainers may name as inference.base_url (it and the paths under it; repeatable); none: requests with `inference` are refused. The server's own model API keys are never sent to it",
      ),
  }),
  examples: [
    "flakegym serve --tokenizer ./Qwen3-8B",
    "FLAKEGYM_SERVE_TOKEN=… flakegym serve --host 0.0.0.0 --port 8470 --tokenizer ./Qwen3-8B --max-groups 4",
    "FLAKEGYM_NOMAD_DRIVER=raw_exec flakegym serve --tokenizer ./Qwen3-8B --backend nomad --gateway-advertise 10.0.0.5:8089",
  ],
  async run(opts, ctx) {
    const maxGroups = serveMaxGroups(opts);
    try {
      checkAllowedUpstreams(opts.allowUpstream);
    } catch (err) {
      throw new UsageError(
        (err as Error).message,
        "pass the trainer's endpoint, e.g. --allow-upstream http://10.0.0.7:8000/v1",
      );
    }
    const stateDir = await checkOutDir("--state-dir", opts.stateDir, ctx.cwd);
    const tokenizerDir = resolve(ctx.cwd, opts.tokenizer);
    const tokenizer = await loadChatTokenizer(tokenizerDir, { signal: ctx.signal });
    const swept = await sweepLeftovers();
    for (const x of swept.results) ctx.stderr.write(`gc: ${formatSweepResult(x, false)}\n`);
    const token = ctx.env.FLAKEGYM_SERVE_TOKEN?.trim() || undefined;
    const note = (m: string) => ctx.stderr.write(`${m}\n`);
    const concurrency = opts.concurrency ?? Math.max(1, availableParallelism());
    const pool = resolvePool({
      command: "serve",
      trajectories: 0,
      concurrency,
      ...(opts.pool !== undefined ? { size: opts.pool } : {}),
      ...(opts.poolIdle !== undefined ? { idleS: opts.poolIdle } : {}),
      ...(opts.reuse !== undefined ? { reuse: opts.reuse } : {}),
    });
    const handle = await startServe({
      host: opts.host,
      port: opts.port,
      ...(token ? { token } : {}),
      maxGroups,
      stateDir,
      tokenizer,
      concurrency,
      backend: opts.backend,
      ...(opts.catalog ? { catalog: resolve(ctx.cwd, opts.catalog) } : {}),
      ...(opts.reposDir ? { reposDir: resolve(ctx.cwd, opts.reposDir) } : {}),
      env: ctx.env,
      cwd: ctx.cwd,
      onNote: note,
      allowUpstreams: opts.allowUpstream,
      depsFor: (config, runId, signal) =>
        createRolloutDeps(config, {
          runId,
          signal,
          // a group's policy is the trainer's endpoint: this server's model API keys never go there
          env: withoutModelKeys(ctx.env),
          onNote: note,
          ...(pool ? { pool } : {}),
          ...(opts.gatewayAdvertise ? { gatewayAdvertise: opts.gatewayAdvertise } : {}),
        }),
    });
    ctx.stdout.write(`flakegym serve listening on ${handle.url}\n`);
    if (!ctx.signal.aborted)
      await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
    ctx.stderr.write("serve: stopping (running groups resume when resubmitted)\n");
    const interrupted = await handle.close();
    if (interrupted === 0) return 0;
    ctx.stderr.write(
      `serve: ${interrupted} group(s) stopped unfinished (exit 130); resubmit the same request to a server on --state-dir to resume them\n`,
    );
    return 130;
  },
});
