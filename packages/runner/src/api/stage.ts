import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { StageName } from "../contract/contract.js";
import { FlakegymError } from "../errors.js";
import { classifyOutcome, type GatewayVerdict } from "../rollout/classify-outcome.js";
import type { Outcome } from "../run-format/schema.js";
import { SANDBOX_GATEWAY_SOCKET, SANDBOX_PATHS } from "../workers/local/shape.js";
import type { ExecResult, WorkerBackend } from "../workers/types.js";
import { stageOutcomeEvidence } from "./outcome.js";
import type { EnvSession } from "./session.js";

/** flakegym's files in the workspace, recreated before every stage (the stage may have changed it). */
export const RUN_DIR = ".flakegym-run";

export interface StageRunInput {
  readonly session: EnvSession;
  readonly stage: StageName;
  /** Run this command instead of the stage's script (flakegym running a hinted command itself). */
  readonly command?: string;
  /** Log name (default: the stage name). */
  readonly label?: string;
  readonly backend: WorkerBackend;
  /** Host dir of this call (`<session>/calls/<n>-<name>`): the stage's log and copied artifacts. */
  readonly callDir: string;
  /** Files flakegym gives the stage, by name under `$FLAKEGYM_RUN` (hints.json, prompts.jsonl). */
  readonly inputs: Readonly<Record<string, string>>;
  readonly env: Readonly<Record<string, string>>;
  readonly maxCmdSeconds: number;
  /** The gateway's host socket, bound at {@link SANDBOX_GATEWAY_SOCKET} (rollout calls). */
  readonly gatewaySocket?: string;
  /** The gateway's verdict on the call's route once the stage has ended (rollout calls with a policy). */
  readonly gateway?: () => Promise<GatewayVerdict>;
  readonly signal: AbortSignal;
  readonly totalExpired: () => boolean;
}

export interface StageRun {
  readonly stage: StageName;
  readonly outcome: Outcome;
  readonly exitCode: number;
  readonly durationMs: number;
  /** Host dir the stage wrote its artifacts to (`$FLAKEGYM_OUT`), read only with safe reads. */
  readonly outDir: string;
  /** Host file with the stage's stdout and stderr. */
  readonly logFile: string;
  /** stdout + stderr (for test summaries). */
  readonly output: string;
}

/**
 * Runs one stage script in a fresh sandbox over the session workspace: `sh <script>` at
 * /workspace with the contract's env, flakegym's `FLAKEGYM_*` variables and the call's limits.
 */
export async function runStage(input: StageRunInput): Promise<StageRun> {
  const { session, stage } = input;
  const script = session.contract.stages[stage];
  if (script === undefined && input.command === undefined) {
    throw new FlakegymError("E_STAGE_MISSING", `the contract has no '${stage}' stage`, {
      hint: `add stages.${stage} to flakegym.yml`,
    });
  }
  const runDir = join(session.workspace, RUN_DIR);
  await rm(runDir, { recursive: true, force: true }); // never follows a symlink the stage left
  await mkdir(join(runDir, "out"), { recursive: true });
  for (const [name, text] of Object.entries(input.inputs)) await writeFile(join(runDir, name), text);
  const inBox = `${SANDBOX_PATHS.workspace}/${RUN_DIR}`;
  const env = {
    ...session.contract.env,
    ...input.env,
    FLAKEGYM_STAGE: stage,
    FLAKEGYM_SESSION: session.id,
    FLAKEGYM_TARGET_KIND: session.target.kind,
    FLAKEGYM_RUN: inBox,
    FLAKEGYM_OUT: `${inBox}/out`,
    FLAKEGYM_HINTS: `${inBox}/hints.json`,
    FLAKEGYM_MAX_CMD_SECONDS: String(input.maxCmdSeconds),
  };
  await mkdir(input.callDir, { recursive: true });
  const logFile = join(input.callDir, `${input.label ?? stage}.log`);
  const t0 = performance.now();
  let result: ExecResult | undefined;
  let infra: string | undefined;
  try {
    const worker = await input.backend.start(
      {
        runId: session.id,
        taskId: session.id,
        trajectoryId: `${stage}-${session.calls}`,
        profile: session.contract.profile,
        workspace: session.workspace,
        gateway: input.gatewaySocket ? { socketPath: input.gatewaySocket } : {},
        limits: { memoryMb: 4096, pids: 1024, wallClockMs: (input.maxCmdSeconds + 30) * 1000 },
        agent: false,
        env,
      },
      input.signal,
    );
    try {
      result = await worker.exec(input.command ?? `sh ${script}`, {
        timeoutMs: input.maxCmdSeconds * 1000,
        env,
        signal: input.signal,
      });
    } finally {
      await worker.stop();
    }
  } catch (err) {
    if (input.signal.aborted && !input.totalExpired()) throw input.signal.reason;
    infra = err instanceof Error ? err.message : String(err);
  }
  // the caller stopped the call (not our deadline): theirs to handle, not an outcome
  if (input.signal.aborted && !input.totalExpired()) throw input.signal.reason;
  const durationMs = Math.round(performance.now() - t0);
  const output = result ? `${result.stdout}\n${result.stderr}` : "";
  await writeFile(
    logFile,
    result ? `${result.stdout}\n--- stderr ---\n${result.stderr}\n` : `${infra ?? ""}\n`,
  );
  const outcome = classifyOutcome(
    stageOutcomeEvidence({
      exitCode: result?.exitCode ?? -1,
      timedOut: result?.timedOut ?? false,
      ...(result?.limit ? { limit: result.limit } : {}),
      ...(result?.sandboxKilled ? { sandboxKilled: true } : {}),
      ...(infra !== undefined ? { infra } : {}),
      totalExpired: input.totalExpired(),
      maxCmdSeconds: input.maxCmdSeconds,
      ...(input.gateway ? { gateway: await input.gateway() } : {}),
    }),
  );
  return {
    stage,
    outcome,
    exitCode: result?.exitCode ?? -1,
    durationMs,
    outDir: join(runDir, "out"),
    logFile,
    output,
  };
}

/** Copies a validated artifact's text into the call dir (flakegym's own copy, kept after teardown of the workspace). */
export async function keepArtifact(callDir: string, name: string, text: string): Promise<string> {
  const dest = join(callDir, name);
  await writeFile(dest, text);
  return dest;
}
