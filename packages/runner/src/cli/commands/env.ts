import { writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { evaluation } from "../../api/evaluation.js";
import type { ApiEvent } from "../../api/events.js";
import { absoluteLlm } from "../../api/llm.js";
import { rollout } from "../../api/rollout.js";
import { defaultSessionsDir } from "../../api/session.js";
import { setup } from "../../api/setup.js";
import { teardown } from "../../api/teardown.js";
import { checkOutDir } from "../../rollout/out-path.js";
import type { BackendConfigInput } from "../../workers/backend.js";
import type { CliContext } from "../command.js";
import { defineCommand } from "../command.js";

/** `flakegym env setup|rollout|evaluation|teardown`: the programmatic API (docs/reference/api.md) as commands. */

const sessionsDir = z
  .string()
  .optional()
  .describe("where sessions live (default $FLAKEGYM_SESSIONS_DIR, else runs/sessions)");
const maxCmdSeconds = z.number().int().min(1).optional().describe("override the contract's max_cmd_seconds");
const maxTotalSeconds = z
  .number()
  .int()
  .min(1)
  .optional()
  .describe("override the contract's max_total_seconds");

const backend = z
  .enum(["local", "podman"])
  .optional()
  .describe(
    "where the stages run (default local bubblewrap; podman: containers, see docs/reference/sandbox.md). Nomad needs a routable gateway, which only rollout's --backend sets up",
  );
const images = z
  .enum(["host", "nix"])
  .default("host")
  .describe("with --backend podman: host (this machine's /usr) or nix (the flake's snapshot images)");

/** The API's `backend` option from `--backend` and `--images` (none: the API's default, local). Pure. */
export function envBackendOf(o: {
  backend?: "local" | "podman" | undefined;
  images?: "host" | "nix" | undefined;
}): { backend?: BackendConfigInput } {
  if (o.backend === undefined) return {};
  return {
    backend: o.backend === "podman" ? { kind: "podman", images: o.images ?? "host" } : { kind: "local" },
  };
}

function limitsOf(o: { maxCmdSeconds?: number | undefined; maxTotalSeconds?: number | undefined }) {
  return {
    ...(o.maxCmdSeconds !== undefined ? { max_cmd_seconds: o.maxCmdSeconds } : {}),
    ...(o.maxTotalSeconds !== undefined ? { max_total_seconds: o.maxTotalSeconds } : {}),
  };
}

/** Progress on stderr, one line per event. */
export function eventPrinter(ctx: CliContext): (e: ApiEvent) => void {
  return (e) =>
    ctx.stderr.write(
      `${e.kind === "phase" ? `${e.phase}: ${e.detail}` : e.kind === "stage-start" ? `${e.label}: started` : `${e.label}: ${e.outcome.kind} in ${e.durationMs} ms`}\n`,
    );
}

export const envSetupCommand = defineCommand({
  path: ["env", "setup"],
  summary: "make an environment session from a repository, git URL, owner/repo, .jsonl dataset or task id",
  positional: "target",
  options: z.object({
    target: z.string().describe("repository dir, git URL, owner/repo, dataset .jsonl or catalog task id"),
    llm: z
      .string()
      .optional()
      .describe(
        "policy that scaffolds a missing flakegym.yml with Cline (openai:…, anthropic:…, scripted:<file>)",
      ),
    scaffold: z
      .boolean()
      .default(true)
      .describe("without a flakegym.yml: --no-scaffold builds the generic contract from the target's hints"),
    maxCmdSeconds,
    maxTotalSeconds,
    sessionsDir,
    backend,
    images,
  }),
  examples: [
    "flakegym env setup ./my-repo",
    "flakegym env setup rows.jsonl",
    "flakegym env setup owner/repo --no-scaffold",
  ],
  async run(opts, ctx) {
    // where sessions are written is checked before anything starts (a /proc path never answers)
    const flag =
      opts.sessionsDir !== undefined ? "--sessions-dir" : "$FLAKEGYM_SESSIONS_DIR (or runs/sessions)";
    await checkOutDir(flag, opts.sessionsDir ?? defaultSessionsDir(ctx.env, ctx.cwd), ctx.cwd);
    const s = await setup(opts.target, {
      noScaffold: !opts.scaffold,
      ...(opts.llm !== undefined ? { llm: absoluteLlm(opts.llm, ctx.cwd) } : {}),
      limits: limitsOf(opts),
      cwd: ctx.cwd,
      signal: ctx.signal,
      onEvent: eventPrinter(ctx),
      ...(opts.sessionsDir ? { sessionsDir: opts.sessionsDir } : {}),
      ...envBackendOf(opts),
    });
    ctx.stdout.write(
      `${JSON.stringify({ id: s.id, dir: s.dir, contract: s.contractSource, hints: s.hints.length })}\n`,
    );
    return 0;
  },
});

export const envRolloutCommand = defineCommand({
  path: ["env", "rollout"],
  summary: "run a session's rollout stage with a policy (or a local model directory)",
  options: z.object({
    session: z.string().describe("session id (or directory) printed by env setup"),
    llm: z
      .string()
      .describe(
        "openai:<url>#<model>, anthropic:<url>#<model>, scripted:<file>, empty, or a model directory",
      ),
    maxSamples: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("prompts a generic rollout asks at most (default 8)"),
    minSamples: z.number().int().min(1).optional().describe("check: fail with fewer samples"),
    minDistinctPrompts: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe("check: minimum share of distinct prompts"),
    tokenizer: z
      .string()
      .optional()
      .describe(
        "the policy's tokenizer directory: each sample gets the token ids of the call that produced it (written to samples.tokens.jsonl)",
      ),
    maxCmdSeconds,
    maxTotalSeconds,
    sessionsDir,
    backend,
    images,
  }),
  examples: ["flakegym env rollout --session <id> --llm openai:http://127.0.0.1:8000/v1#my-model"],
  async run(opts, ctx) {
    const checks = {
      ...(opts.minSamples !== undefined ? { minSamples: opts.minSamples } : {}),
      ...(opts.minDistinctPrompts !== undefined ? { minDistinctPrompts: opts.minDistinctPrompts } : {}),
    };
    const r = await rollout(absoluteLlm(opts.llm, ctx.cwd), {
      session: opts.session,
      limits: limitsOf(opts),
      signal: ctx.signal,
      onEvent: eventPrinter(ctx),
      ...(Object.keys(checks).length ? { checks } : {}),
      ...(opts.maxSamples !== undefined ? { maxSamples: opts.maxSamples } : {}),
      ...(opts.sessionsDir ? { sessionsDir: opts.sessionsDir } : {}),
      ...(opts.tokenizer ? { tokenizer: resolve(ctx.cwd, opts.tokenizer) } : {}),
      ...envBackendOf(opts),
    });
    let tokens: { tokenized: number; samples_tokens: string } | undefined;
    if (opts.tokenizer) {
      const file = join(r.paths.callDir, "samples.tokens.jsonl");
      await writeFile(file, r.samples.map((x) => `${JSON.stringify(x)}\n`).join(""));
      tokens = { tokenized: r.samples.filter((x) => x.tokens).length, samples_tokens: file };
    }
    ctx.stdout.write(
      `${JSON.stringify({ ok: r.ok, outcome: r.outcome, samples: r.samples.length, ...(tokens ? { tokenized: tokens.tokenized } : {}), problems: r.problems, paths: { ...r.paths, ...(tokens ? { samples_tokens: tokens.samples_tokens } : {}) } })}\n`,
    );
    return r.ok ? 0 : 1;
  },
});

export const envEvaluationCommand = defineCommand({
  path: ["env", "evaluation"],
  summary: "run a session's evaluation stage and print its score",
  options: z.object({
    session: z.string().describe("session id (or directory) printed by env setup"),
    maxCmdSeconds,
    maxTotalSeconds,
    sessionsDir,
    backend,
    images,
  }),
  examples: [
    "flakegym env evaluation --session <id>",
    "flakegym env evaluation --session <id> --backend podman",
  ],
  async run(opts, ctx) {
    const e = await evaluation({
      session: opts.session,
      limits: limitsOf(opts),
      signal: ctx.signal,
      onEvent: eventPrinter(ctx),
      ...(opts.sessionsDir ? { sessionsDir: opts.sessionsDir } : {}),
      ...envBackendOf(opts),
    });
    ctx.stdout.write(
      `${JSON.stringify({ ok: e.ok, outcome: e.outcome, score: e.score, scoreSource: e.scoreSource, reason: e.reason, summary: e.summary, hintsUsed: e.hintsUsed })}\n`,
    );
    return e.ok ? 0 : 1;
  },
});

export const envTeardownCommand = defineCommand({
  path: ["env", "teardown"],
  summary: "remove a session (idempotent)",
  options: z.object({
    session: z.string().describe("session id (or directory)"),
    sessionsDir,
  }),
  async run(opts, ctx) {
    const r = await teardown({
      session: opts.session,
      ...(opts.sessionsDir ? { sessionsDir: opts.sessionsDir } : {}),
    });
    ctx.stdout.write(`${JSON.stringify(r)}\n`);
    return 0;
  },
});
