import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import {
  MAX_SAMPLES_BYTES,
  parseSamples,
  RolloutArtifact,
  readArtifact,
  type Sample,
} from "../contract/artifacts.js";
import { effectiveLimits, type LimitOverrides } from "../contract/contract.js";
import { readTargetFile } from "../contract/safe-read.js";
import { checkSamples, type SampleChecks } from "../contract/validate-samples.js";
import { FlakegymError } from "../errors.js";
import { type ChatTokenizer, loadChatTokenizer } from "../export/tokenizer.js";
import { startGatewayThread } from "../gateway/thread.js";
import { readTurnLog } from "../gateway/turn-log.js";
import type { GatewayTerminal, PolicyGateway, TrajectoryRoute } from "../gateway/types.js";
import { createUpstream } from "../policy/create-upstream.js";
import { type GatewayVerdict, gatewayVerdictOf } from "../rollout/classify-outcome.js";
import type { Outcome } from "../run-format/schema.js";
import { SANDBOX_GATEWAY_SOCKET } from "../workers/local/shape.js";
import { type CallOptions, callContext, withCall } from "./call.js";
import { type LlmRef, llmEnv, parseLlm } from "./llm.js";
import { sampleTokensOf, type TokenizedSample } from "./sample-tokens.js";
import { type EnvSession, loadSession, type SessionRef } from "./session.js";
import { keepArtifact } from "./stage.js";

export interface EnvRolloutOptions extends CallOptions {
  readonly session: SessionRef;
  /** Prompts a generic rollout asks at most (`FLAKEGYM_MAX_SAMPLES`, default 8). */
  readonly maxSamples?: number;
  /** Model calls allowed in this call (the gateway's budget, default 256). */
  readonly maxModelCalls?: number;
  /** Opt-in checks of the samples; a failed check makes the result not ok. */
  readonly checks?: SampleChecks;
  /** Overrides of the contract's limits for this call. */
  readonly limits?: LimitOverrides;
  /**
   * The policy's tokenizer (a directory or one loaded): each sample then carries the token ids of
   * the model call that produced it (`tokens`), from the gateway's turn log.
   */
  readonly tokenizer?: string | ChatTokenizer;
}

export interface EnvRolloutResult {
  readonly session: EnvSession;
  readonly llm: LlmRef;
  readonly outcome: Outcome;
  /** Completed, artifacts valid and every opt-in check passed. */
  readonly ok: boolean;
  /** The stage's samples; with `tokenizer`, each with the ids of the call that produced it. */
  readonly samples: readonly TokenizedSample[];
  /** Problems found by the opt-in checks. */
  readonly problems: readonly string[];
  readonly paths: {
    readonly callDir: string;
    readonly log: string;
    readonly samples?: string;
    readonly turns?: string;
  };
  readonly durationMs: number;
}

/**
 * Runs the contract's `rollout` stage with `llm` (a policy spec or a local model directory). Model
 * policies are served to the stage by a policy gateway on a unix socket bound into the sandbox.
 */
export async function rollout(llm: string, opts: EnvRolloutOptions): Promise<EnvRolloutResult> {
  const ctx = callContext(opts);
  const session = await loadSession(opts.session, ctx.sessionsDir);
  const absolute = resolve(llm);
  const isDir = (await stat(absolute).catch(() => undefined))?.isDirectory() === true;
  const { ref, policy } = parseLlm(llm, isDir, absolute);
  const upstream = policy ? await createUpstream(policy, { signal: ctx.signal }) : undefined;
  const limits = effectiveLimits(session.contract, { ...session.limits, ...opts.limits });
  const sockDir = upstream ? await mkdtemp(join(tmpdir(), "fg-api-")) : undefined;
  let gateway: PolicyGateway | undefined;
  const t0 = performance.now();
  try {
    if (sockDir)
      // the rollout pipeline's arrangement: the gateway in a thread of its own (docs/reference/gateway.md)
      gateway = await startGatewayThread({
        listen: { socketPath: join(sockDir, "gw.sock") },
        signal: ctx.signal,
      });
    const done = await withCall(
      session,
      "rollout",
      opts,
      limits,
      async (run, callDir) => {
        let route: TrajectoryRoute | undefined;
        if (gateway && upstream) {
          route = gateway.register(`rollout-${Number.parseInt(basename(callDir), 10)}`, {
            upstream,
            limits: { maxRequests: opts.maxModelCalls ?? 256 },
            turnLogPath: join(callDir, "turns.jsonl"),
          });
        }
        const r = await run({
          stage: "rollout",
          env: rolloutEnv(ref, policy, route, opts.maxSamples),
          ...(gateway?.socketPath ? { gatewaySocket: gateway.socketPath } : {}),
          ...(route ? { gateway: () => verdictOf(route, join(callDir, "turns.jsonl")) } : {}),
        });
        const { samples, samplesPath } =
          r.outcome.kind === "completed" ? await keepSamples(r, callDir) : { samples: [] };
        return { r, samples, samplesPath, callDir, turns: route ? join(callDir, "turns.jsonl") : undefined };
      },
      (s, v) => (v.samplesPath ? { ...s, lastSamples: v.samplesPath } : s),
    );
    const { r, samples, samplesPath, callDir, turns } = done.value;
    const next: EnvSession = done.session;
    const problems = opts.checks ? checkSamples(samples, opts.checks) : [];
    const tokenized =
      opts.tokenizer !== undefined && turns
        ? sampleTokensOf(
            samples,
            await readTurnLog(turns).catch(() => []),
            typeof opts.tokenizer === "string"
              ? await loadChatTokenizer(opts.tokenizer, { signal: ctx.signal })
              : opts.tokenizer,
          )
        : samples;
    return {
      session: next,
      llm: ref,
      outcome: r.outcome,
      ok: r.outcome.kind === "completed" && problems.length === 0,
      samples: tokenized,
      problems,
      paths: {
        callDir,
        log: r.logFile,
        ...(samplesPath ? { samples: samplesPath } : {}),
        ...(turns ? { turns } : {}),
      },
      durationMs: Math.round(performance.now() - t0),
    };
  } finally {
    await gateway?.close();
    if (sockDir) await rm(sockDir, { recursive: true, force: true });
  }
}

/** The rollout stage's environment: the policy's endpoint (through the route when there is one). */
function rolloutEnv(
  ref: LlmRef,
  policy: Parameters<typeof llmEnv>[1],
  route: TrajectoryRoute | undefined,
  maxSamples: number | undefined,
): Record<string, string> {
  const endpoint = route
    ? {
        baseUrl: route.baseUrlsFor("http://gateway").openai,
        socket: SANDBOX_GATEWAY_SOCKET,
        token: route.token,
      }
    : undefined;
  return {
    ...llmEnv(ref, policy, endpoint),
    FLAKEGYM_MAX_SAMPLES: String(maxSamples ?? 8),
    FLAKEGYM_PROMPTS: "/workspace/.flakegym-run/prompts.jsonl",
  };
}

/** A completed stage's samples, read from its rollout.json and kept in the call's directory. */
async function keepSamples(
  r: { readonly outDir: string; readonly logFile: string },
  callDir: string,
): Promise<{ samples: Sample[]; samplesPath?: string }> {
  const art = await readArtifact(r.outDir, "rollout.json", RolloutArtifact);
  if (!art) throw missing("rollout.json", r.logFile);
  const text = await readTargetFile(r.outDir, art.paths.samples_jsonl, MAX_SAMPLES_BYTES);
  if (text === undefined) throw missing(art.paths.samples_jsonl, r.logFile);
  const samples = parseSamples(text, art.paths.samples_jsonl);
  await keepArtifact(callDir, "rollout.json", JSON.stringify(art));
  return { samples, samplesPath: await keepArtifact(callDir, "samples.jsonl", text) };
}

/** The gateway's verdict on the call's route, from its status and the call's turn log. */
async function verdictOf(route: TrajectoryRoute, turnLog: string): Promise<GatewayVerdict> {
  const turns = await readTurnLog(turnLog).catch(() => []);
  if (!route.signal.aborted) return gatewayVerdictOf(undefined, turns);
  const reason: unknown = route.signal.reason;
  // the gateway's thread died (an Error, not a verdict): the machinery failed the call
  const terminal: GatewayTerminal =
    reason instanceof Error
      ? { kind: "infra_error", message: reason.message, at: new Date().toISOString() }
      : (reason as GatewayTerminal);
  return gatewayVerdictOf(terminal, turns);
}

function missing(file: string, log: string): FlakegymError {
  return new FlakegymError(
    "E_ARTIFACT_MISSING",
    `the rollout stage ended without writing ${file} (a plain file in $FLAKEGYM_OUT)`,
    {
      hint: `see its log: ${log}`,
    },
  );
}
