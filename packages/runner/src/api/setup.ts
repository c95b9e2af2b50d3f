import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { match } from "ts-pattern";
import { RuntimeEnv, readArtifact } from "../contract/artifacts.js";
import { type Contract, effectiveLimits, type LimitOverrides, loadContract } from "../contract/contract.js";
import type { Hint } from "../contract/hints.js";
import { type PromptRow, promptsOfJsonl, promptsOfReadme } from "../contract/prompts.js";
import { readTargetFile } from "../contract/safe-read.js";
import { describeError, FlakegymError } from "../errors.js";
import { BUILTIN_CATALOG_DIR } from "../tasks/catalog.js";
import { type CallOptions, callContext, withCall } from "./call.js";
import { parseLlm } from "./llm.js";
import { scaffoldContract } from "./scaffold.js";
import { type EnvSession, newSessionId, saveSession } from "./session.js";
import { classifyTarget, type PathKind, type TargetRef } from "./target.js";
import {
  collectHints,
  DATASET_DIR,
  extensionCounts,
  guessProfile,
  materializeTarget,
  rootNames,
  writeGenericContract,
} from "./workspace.js";

export interface SetupOptions extends CallOptions {
  /** Without a contract, build a generic one from the hints instead of scaffolding with Cline. */
  readonly noScaffold?: boolean;
  /** Overrides of the contract's limits, kept for every call of the session. */
  readonly limits?: LimitOverrides;
  /**
   * The session's policy (a policy spec): without a contract (and without `noScaffold`), Cline is
   * asked with it to write one, in a sandbox, validated, with repair rounds.
   */
  readonly llm?: string;
  /** Directory the caller's relative target is resolved against (default: the process cwd). */
  readonly cwd?: string;
  /**
   * Keep a failed setup's logs: its session directory stays, without the workspace copy, with the
   * whole error in `error.txt`, and the thrown error names it (`failedSessionDir`). Default: a
   * failed setup leaves nothing behind.
   */
  readonly keepFailed?: boolean;
}

/** Where a failed setup's logs were kept (`keepFailed`), when they were. */
export function failedSessionDirOf(err: unknown): string | undefined {
  const d = (err as { failedSessionDir?: unknown } | null)?.failedSessionDir;
  return typeof d === "string" ? d : undefined;
}

export const PROMPTS_FILE = "prompts.jsonl";
const MAX_DATASET_BYTES = 64 * 1024 * 1024;

/**
 * Resolves a target (a repository path, git URL or owner/repo, a .jsonl dataset, a catalog task
 * id), copies it into a new session's workspace, finds its hints, loads its `flakegym.yml` (or
 * builds the generic one), runs its `deploy` stage when it has one, and returns the session.
 */
export async function setup(target: string, opts: SetupOptions = {}): Promise<EnvSession> {
  const ref = await resolveTarget(target, opts.cwd ?? process.cwd());
  opts.onEvent?.({ kind: "phase", phase: "resolve", detail: `${ref.kind} target` });
  const ctx = callContext(opts);
  const id = newSessionId();
  const dir = join(ctx.sessionsDir, id);
  const workspace = join(dir, "workspace");
  const started = Date.now();
  try {
    opts.onEvent?.({ kind: "phase", phase: "materialize", detail: workspace });
    const { taskPrompt } = await materializeTarget(ref, workspace, ctx.signal);
    const hints = await collectHints(workspace);
    opts.onEvent?.({ kind: "phase", phase: "hints", detail: `${hints.length} candidate commands` });
    const { contract, source } = await contractOf(ref, workspace, hints, {
      noScaffold: opts.noScaffold === true,
      ...(opts.llm !== undefined ? { llm: opts.llm } : {}),
      sessionId: id,
      logDir: join(dir, "scaffold"),
      signal: ctx.signal,
      ...(opts.backend ? { backend: opts.backend } : {}),
    });
    opts.onEvent?.({
      kind: "phase",
      phase: "contract",
      detail: `${source} contract, profile ${contract.profile}`,
    });
    const prompts = await promptsOf(ref, workspace, taskPrompt);
    await writeFile(join(dir, PROMPTS_FILE), prompts.map((p) => JSON.stringify(p)).join("\n") + "\n");
    let session: EnvSession = {
      version: 1,
      id,
      createdAt: new Date(started).toISOString(),
      target: ref,
      contract,
      contractSource: source,
      hints,
      dir,
      workspace,
      limits: opts.limits ?? {},
      calls: 0,
      state: "ready",
    };
    await saveSession(session);
    if (contract.stages.deploy !== undefined) session = await deploy(session, opts);
    return session;
  } catch (err) {
    if (opts.keepFailed && err && typeof err === "object" && (await pathExists(dir))) {
      // the logs (scaffold rounds, stage logs) stay for whoever asked; the workspace copy goes
      await rm(workspace, { recursive: true, force: true }).catch(() => undefined);
      await writeFile(join(dir, "error.txt"), `${describeError(err)}\n`).catch(() => undefined);
      Object.assign(err, { failedSessionDir: dir });
      throw err;
    }
    // a failed setup leaves nothing behind (no one knows its id to tear it down)
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
}

const pathExists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

async function resolveTarget(target: string, cwd: string): Promise<TargetRef> {
  const absolute = resolve(cwd, target);
  const st = await stat(absolute).catch(() => undefined);
  const pathKind: PathKind = st?.isDirectory() ? "dir" : st?.isFile() ? "file" : undefined;
  const isTask =
    /^[a-z0-9][a-z0-9._-]*$/.test(target) &&
    (await stat(join(BUILTIN_CATALOG_DIR, target, "task.json")).catch(() => undefined)) !== undefined;
  return classifyTarget(target, { pathKind, absolute, isTask });
}

async function contractOf(
  ref: TargetRef,
  workspace: string,
  hints: readonly Hint[],
  o: {
    noScaffold: boolean;
    llm?: string;
    sessionId: string;
    logDir: string;
    signal: AbortSignal;
    backend?: CallOptions["backend"];
  },
): Promise<{ contract: Contract; source: EnvSession["contractSource"] }> {
  if (ref.kind === "dataset")
    return { contract: await writeGenericContract(workspace, "dev-base"), source: "generic" };
  const own = await loadContract(workspace);
  if (own) return { contract: own, source: "repo" };
  const profile = guessProfile(await rootNames(workspace), await extensionCounts(workspace));
  if (o.noScaffold || ref.kind === "task") {
    return { contract: await writeGenericContract(workspace, profile), source: "generic" };
  }
  if (o.llm === undefined) {
    throw new FlakegymError(
      "E_NO_CONTRACT",
      "the target has no flakegym.yml and no llm was given to scaffold one",
      {
        hint: "pass llm (--llm) so Cline writes it, write it yourself (docs/reference/api.md), or pass noScaffold: true (--no-scaffold) for the generic contract",
      },
    );
  }
  const { policy } = parseLlm(o.llm, false, o.llm);
  await mkdir(o.logDir, { recursive: true });
  const { contract } = await scaffoldContract({
    workspace,
    sessionId: o.sessionId,
    policy: policy!,
    profile,
    hints,
    logDir: o.logDir,
    signal: o.signal,
    ...(o.backend ? { backend: o.backend } : {}),
  });
  return { contract, source: "scaffolded" };
}

async function promptsOf(
  ref: TargetRef,
  workspace: string,
  taskPrompt: string | undefined,
): Promise<PromptRow[]> {
  return await match(ref)
    .with({ kind: "dataset" }, async (t) => {
      const rel = `${DATASET_DIR}/${basename(t.file)}`;
      const text = await readTargetFile(workspace, rel, MAX_DATASET_BYTES);
      const { rows, rejected } = promptsOfJsonl(text ?? "");
      if (rows.length === 0) {
        throw new FlakegymError(
          "E_DATASET",
          `${t.file}: no row has a prompt (rows without one: ${rejected.slice(0, 10).join(", ") || "none"})`,
          {
            hint: "each JSONL row needs a string field prompt, problem_statement, question, instruction or input (and optionally answer), or swe-agent `conversations` with a human turn",
          },
        );
      }
      return rows;
    })
    .with({ kind: "task" }, async () => [{ prompt: taskPrompt ?? "" }])
    .otherwise(async () => promptsOfReadme(await readTargetFile(workspace, "README.md")));
}

/** Runs the `deploy` stage; it must write a valid `runtime_env.json` with ok true. */
async function deploy(session: EnvSession, opts: SetupOptions): Promise<EnvSession> {
  const limits = effectiveLimits(session.contract, session.limits);
  const done = await withCall(session, "deploy", opts, limits, async (run) => {
    const r = await run({ stage: "deploy" });
    const env =
      r.outcome.kind === "completed"
        ? await readArtifact(r.outDir, "runtime_env.json", RuntimeEnv)
        : undefined;
    if (!env?.ok) {
      throw new FlakegymError(
        "E_DEPLOY",
        `the deploy stage did not prepare the runtime (${r.outcome.kind === "completed" ? (env ? `runtime_env.json: ok false${env.detail ? `: ${env.detail}` : ""}` : "runtime_env.json missing") : r.outcome.kind}); log: ${r.logFile}`,
        { hint: "fix .flakegym/stages' deploy script; it must write $FLAKEGYM_OUT/runtime_env.json" },
      );
    }
    return undefined;
  });
  return done.session;
}
