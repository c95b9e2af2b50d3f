import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  type CommittedWorkspace,
  type CommitWorkspaceOptions,
  type ExcludedPath,
  readContained,
  commitWorkspace as sealedCommitWorkspace,
  workspaceDiff as sealedWorkspaceDiff,
  type WorkspaceDiff,
  WorkspaceDiffError,
  type WorkspaceDiffOptions,
} from "../supervisor/workspace-diff.mjs";
import type { TaskRun } from "./driver.js";
import { ClineVendorError, ErrorCode } from "./errors.js";
import { Outcome } from "./outcome.js";

export {
  type CommittedWorkspace,
  type CommitWorkspaceOptions,
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_TOTAL_BYTES,
  type ExcludedPath,
  readContained,
  readHead,
  sealBase,
  type WorkspaceDiff,
  WorkspaceDiffError,
  type WorkspaceDiffOptions,
} from "../supervisor/workspace-diff.mjs";

/** The task files Cline writes under `<configDir>/data/tasks/<taskId>/` that we keep. */
export const TASK_FILES = [
  "api_conversation_history.json",
  "ui_messages.json",
  "task_metadata.json",
] as const;

export interface CollectArtifactsOptions {
  /** The core's config dir (as given to the launcher); agent-writable, so read without following links. */
  readonly configDir: string;
  /** The task id runClineTask returned ("" when the task never started: no task files then). */
  readonly taskId: string;
  /** The agent's workspace: its changes against `baseCommit` become diff.patch (read as data only). */
  readonly workspace: string;
  /** Final directory; written as `<dest>.tmp-<rand>` and renamed, so it is complete or absent. */
  readonly dest: string;
  /** The snapshot's commit the diff is taken against (never the workspace's HEAD). */
  readonly baseCommit: string;
  /** An objects dir holding `baseCommit` the agent cannot write: the pristine snapshot's `.git/objects`. */
  readonly baseObjects: string;
  /** The driver's result: written as `outcome.json` (validated) and `timings.json` (timings + counts). */
  readonly run?: TaskRun;
  /** More files: `name → content` (strings/Buffers written as-is, other values as JSON). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** Replace `dest` if it exists. Default false (then an existing dest is an error). */
  readonly overwrite?: boolean;
  readonly signal?: AbortSignal;
  /** Bound on the diff. Default 60 s. */
  readonly timeoutMs?: number;
}

/** What ended up in the artifact directory (also written as manifest.json). */
export interface ArtifactManifest {
  readonly dir: string;
  readonly files: readonly { readonly name: string; readonly bytes: number }[];
  /** Task files Cline had not written (e.g. the task never started), or that were refused. */
  readonly missing: readonly string[];
  /** The diff's base commit. */
  readonly baseCommit: string | null;
  /** Paths left out of the diff or refused as task files (`cline:<name>`), with the reason. */
  readonly excluded: readonly ExcludedPath[];
  /** How many paths were excluded in all (`excluded` lists at most 200). */
  readonly excludedTotal: number;
  /** Why there is no diff.patch: the workspace held something git must not read (agent-caused). */
  readonly diffError?: string;
}

/**
 * The workspace's changes against the snapshot's commit as a binary-safe patch, untracked (not
 * ignored) files included, computed without any host tool reading agent-controlled configuration
 * (supervisor/workspace-diff.mjs, shared with cline-supervisor). Errors are ClineVendorErrors
 * (code E_CLINE_ARTIFACTS) whose cause is the WorkspaceDiffError.
 */
export async function workspaceDiff(options: WorkspaceDiffOptions): Promise<WorkspaceDiff> {
  return await asVendorError(`cannot diff ${options.workspace}`, () => sealedWorkspaceDiff(options));
}

/**
 * The workspace's tree committed on top of `baseCommit` (its files as workspaceDiff sees them),
 * its `.git/HEAD` and index pointed at the new commit; see supervisor/workspace-diff.mjs. For a
 * snapshot build, while no agent has touched the workspace. Errors as workspaceDiff's.
 */
export async function commitWorkspace(options: CommitWorkspaceOptions): Promise<CommittedWorkspace> {
  return await asVendorError(`cannot commit ${options.workspace}`, () => sealedCommitWorkspace(options));
}

async function asVendorError<T>(what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (!(err instanceof WorkspaceDiffError)) throw err;
    throw new ClineVendorError(ErrorCode.Artifacts, `${what}: ${err.message}`, {
      cause: err,
      ...(err.hint ? { hint: err.hint } : {}),
    });
  }
}

/** True when the diff failed because of what the agent left in its workspace (not our fault). */
export function isUnsafeWorkspace(err: unknown): boolean {
  return (
    err instanceof ClineVendorError && (err.cause as { code?: string } | undefined)?.code === "E_DIFF_UNSAFE"
  );
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** Cline's task files can be large (long conversations); anything bigger is refused and recorded. */
const MAX_TASK_FILE_BYTES = 512 * 1024 * 1024;

/**
 * Collects a finished task's artifacts into `dest`, atomically: the task's Cline files (copied as
 * they are), `diff.patch` (the workspace's changes), `extra` files (e.g. `outcome.json`,
 * `timings.json`) and `manifest.json`. Missing task files are listed in the manifest, not fatal:
 * a trajectory is never lost because Cline did not get far.
 */
export async function collectArtifacts(options: CollectArtifactsOptions): Promise<ArtifactManifest> {
  const dest = resolve(options.dest);
  if (existsSync(dest) && !options.overwrite)
    throw new ClineVendorError(ErrorCode.Artifacts, `artifact directory ${dest} already exists`, {
      hint: "pass overwrite: true to replace it, or choose a fresh directory",
    });
  const reserved = new Set(["manifest.json", "diff.patch", ...TASK_FILES]);
  if (options.run) for (const n of ["outcome.json", "timings.json"]) reserved.add(n);
  for (const name of Object.keys(options.extra ?? {})) {
    if (!SAFE_NAME.test(name) || reserved.has(name))
      throw new ClineVendorError(ErrorCode.InvalidArgument, `invalid extra artifact name '${name}'`, {
        hint: `use a plain file name (no slashes) other than ${[...reserved].join(", ")}`,
      });
  }
  const tmp = `${dest}.tmp-${randomBytes(6).toString("hex")}`;
  await mkdir(tmp, { recursive: true });
  try {
    const files: { name: string; bytes: number }[] = [];
    const missing: string[] = [];
    const excluded: ExcludedPath[] = [];
    for (const name of TASK_FILES) {
      const r = readTaskFile(options.configDir, options.taskId, name);
      if (r.kind === "file") {
        await writeFile(join(tmp, name), r.data);
        files.push({ name, bytes: r.data.length });
      } else {
        missing.push(name);
        if (r.kind === "refused") excluded.push({ path: `cline:${name}`, reason: r.reason });
      }
    }
    let diffError: string | undefined;
    let excludedTotal = excluded.length;
    try {
      const diff = await workspaceDiff({
        workspace: resolve(options.workspace),
        baseCommit: options.baseCommit,
        baseObjects: resolve(options.baseObjects),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      });
      await writeFile(join(tmp, "diff.patch"), diff.patch);
      files.push({ name: "diff.patch", bytes: diff.patch.length });
      excluded.push(...diff.excluded);
      excludedTotal += diff.excludedTotal;
    } catch (err) {
      if (!isUnsafeWorkspace(err)) throw err;
      diffError = (err as Error).message;
    }
    const generated: [string, unknown][] = options.run
      ? [
          ["outcome.json", Outcome.parse(options.run.outcome)],
          [
            "timings.json",
            { taskId: options.run.taskId, timings: options.run.timings, counts: options.run.counts },
          ],
        ]
      : [];
    for (const [name, value] of [...generated, ...Object.entries(options.extra ?? {})]) {
      const data =
        typeof value === "string" || Buffer.isBuffer(value) ? value : `${JSON.stringify(value, null, 2)}\n`;
      await writeFile(join(tmp, name), data);
      files.push({ name, bytes: Buffer.byteLength(data) });
    }
    const manifest: ArtifactManifest = {
      dir: dest,
      files,
      missing,
      baseCommit: options.baseCommit,
      excluded,
      excludedTotal,
      ...(diffError ? { diffError } : {}),
    };
    await writeFile(
      join(tmp, "manifest.json"),
      `${JSON.stringify({ ...manifest, dir: undefined }, null, 2)}\n`,
    );
    await replaceDir(tmp, dest);
    return manifest;
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Puts the finished directory `tmp` at `dest`, replacing what was there (an artifact dir is whole or absent). */
export async function replaceDir(tmp: string, dest: string): Promise<void> {
  if (existsSync(dest)) {
    const old = `${dest}.old-${randomBytes(6).toString("hex")}`;
    await rename(dest, old);
    await rename(tmp, dest);
    await rm(old, { recursive: true, force: true });
  } else await rename(tmp, dest);
}

/** One of Cline's task files, read without following links out of the config dir. */
function readTaskFile(configDir: string, taskId: string, name: string) {
  if (!taskId) return { kind: "missing" } as const;
  if (!SAFE_NAME.test(taskId))
    return { kind: "refused", reason: `task id '${taskId}' is not a plain name` } as const;
  return readContained(resolve(configDir), `data/tasks/${taskId}/${name}`, { maxBytes: MAX_TASK_FILE_BYTES });
}
