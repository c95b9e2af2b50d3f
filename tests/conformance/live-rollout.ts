import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "../../packages/runner/src/cli/parse-args.js";
import { FlakegymError } from "../../packages/runner/src/errors.js";
import { readTurnLog, type TurnRecord } from "../../packages/runner/src/gateway/turn-log.js";
import { newRunId, resolveRolloutOptions } from "../../packages/runner/src/rollout/config.js";
import { RolloutOptions } from "../../packages/runner/src/rollout/options.js";
import { trajectoryId } from "../../packages/runner/src/rollout/plan.js";
import { runRollout } from "../../packages/runner/src/rollout/run-rollout.js";
import { createRolloutDeps } from "../../packages/runner/src/rollout/wire.js";
import { runPaths } from "../../packages/runner/src/run-format/run-dir.js";
import type { TrajectoryResult } from "../../packages/runner/src/run-format/schema.js";
import { resolveBackend } from "../../packages/runner/src/workers/backend.js";
import type { WorkerBackend } from "../../packages/runner/src/workers/types.js";
import {
  contextWindowFor,
  LIVE_MEMBERS,
  LIVE_SEED,
  type LiveMember,
  SHORT_CALL_TOKENS,
} from "./live-script.js";
import { LIVE_MODEL } from "./live-server.js";
import { startShaper } from "./live-shaper.js";

/**
 * The live group of `npm run conformance`: a real flakegym rollout — the real Cline core in its
 * bubblewrap sandbox, the real gateway, snapshot, scorer (hidden tests) and group export — of one
 * task, five trajectories, against vLLM behind the script's front (live-shaper.ts). It is what
 * `flakegym rollout` runs (the same flags, parsed by its option schema; createRolloutDeps +
 * runRollout), with one difference: its worker backend (the real local one) fails to start member
 * 3's worker, an infra fault before the agent's code runs. Members (LIVE_MEMBERS):
 * 0 truncated — a long unconstrained first call pushes Cline past its `--context-window`, Cline
 *   truncates its history, then the scripted edit and completion: several segments, reward 1;
 * 1 zero — unconstrained sampling only (no tool call; Cline's mistake limit ends it): reward 0;
 * 2 one — the scripted edit and completion, not truncated (two segments all the same: the chat
 *   template re-tokenizes the constrained answer differently, `template_rewrite`): reward 1;
 * 3 infra — its worker never starts (no call, no reward);
 * 4 turn1 — the server refuses its first call (400): a policy error with nothing sampled.
 */
export const LIVE_TASK = "semver-lite-caret-zero";
const GROUP = Object.keys(LIVE_MEMBERS).length;

/**
 * Tokens of Cline's first prompt for this task with the tiny model (the generic XML-tool system
 * prompt plus the task and environment details), measured on this machine kind (10 755); the context window
 * Cline is told is derived from it (contextWindowFor: a margin of ±800 tokens either way).
 */
export const FIRST_PROMPT_TOKENS = 10_800;

/** One member of the live group, as its run recorded it. */
export interface LiveResult {
  readonly turns: TurnRecord[];
  readonly outcome: TrajectoryResult["outcome"];
  readonly reward: number | null;
}

/** The real local backend, but member `failing`'s worker does not start (an infra fault). */
function faultyBackend(real: WorkerBackend, failing: string): WorkerBackend {
  return {
    kind: real.kind,
    capabilities: real.capabilities,
    describe: () => real.describe(),
    start: (spec, signal) =>
      spec.trajectoryId === failing
        ? Promise.reject(
            new FlakegymError(
              "E_WORKER",
              `conformance: worker for ${failing} lost before the agent started (injected infra fault)`,
            ),
          )
        : real.start(spec, signal),
  };
}

/** The rollout's flags, as `flakegym rollout` is given them. */
function argvOf(policyUrl: string, out: string, tokenizer: string): string[] {
  return [
    ...["--task", LIVE_TASK, "--group-size", String(GROUP), "--out", out],
    ...["--policy", `openai:${policyUrl}#${LIVE_MODEL}`, "--seed", String(LIVE_SEED)],
    ...["--temperature", "1", "--max-tokens", String(SHORT_CALL_TOKENS)],
    ...["--context-window", String(contextWindowFor(FIRST_PROMPT_TOKENS))],
    ...["--max-infra-retries", "0", "--concurrency", "2", "--max-turns", "8", "--timeout", "1200"],
    ...["--tokenizer", tokenizer],
  ];
}

/** Runs the live group against vLLM at `vllmBaseUrl`; its run directory is `runDir` (default `<work>/live-run`). */
export async function liveRollout(o: {
  vllmBaseUrl: string;
  work: string;
  runDir?: string;
  tokenizer: string;
  log: (line: string) => void;
}): Promise<{ runDir: string; members: Record<LiveMember, LiveResult>; calls: Record<string, string[]> }> {
  const shaper = await startShaper(o.vllmBaseUrl);
  const runDir = o.runDir ?? join(o.work, "live-run");
  const runId = newRunId();
  const r = resolveRolloutOptions(
    parseArgs(RolloutOptions, argvOf(shaper.baseUrl, runDir, o.tokenizer)),
    process.env,
    o.work,
    runId,
  );
  const signal = new AbortController().signal;
  const { backend: real } = resolveBackend({ kind: "local" }, { env: process.env });
  const failing = trajectoryId(LIVE_TASK, LIVE_MEMBERS.infra);
  try {
    const deps = await createRolloutDeps(r.config, {
      runId,
      signal,
      env: process.env,
      backend: faultyBackend(real, failing),
      onNote: (m) => o.log(`live rollout: ${m}`),
    });
    try {
      const { lines } = await runRollout({
        out: runDir,
        resume: false,
        config: r.config,
        runId,
        deps,
        progress: () => {},
        signal,
      });
      for (const l of lines) o.log(`live rollout: ${l}`);
    } finally {
      await deps.close();
    }
  } finally {
    await shaper.close();
    await real.close?.();
  }
  return { runDir, members: await membersOf(runDir), calls: shaper.calls };
}

/** Each member's turn log, outcome and reward, read from the run directory. */
async function membersOf(runDir: string): Promise<Record<LiveMember, LiveResult>> {
  const paths = runPaths(runDir);
  const out = {} as Record<LiveMember, LiveResult>;
  for (const [member, index] of Object.entries(LIVE_MEMBERS) as [LiveMember, number][]) {
    const t = paths.trajectory(trajectoryId(LIVE_TASK, index));
    const result = JSON.parse(await readFile(t.result, "utf8")) as TrajectoryResult;
    const turns = await readTurnLog(join(t.dir, "turns.jsonl")).catch(() => [] as TurnRecord[]);
    out[member] = { turns, outcome: result.outcome, reward: result.reward };
  }
  return out;
}
