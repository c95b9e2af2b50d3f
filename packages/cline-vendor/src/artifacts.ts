import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { execa } from "execa";
import type { TaskRun } from "./driver.js";
import { ClineVendorError, ErrorCode } from "./errors.js";
import { Outcome } from "./outcome.js";

/** The task files Cline writes under `<configDir>/data/tasks/<taskId>/` that we keep. */
export const TASK_FILES = [
  "api_conversation_history.json",
  "ui_messages.json",
  "task_metadata.json",
] as const;

export interface CollectArtifactsOptions {
  /** The core's config dir (as given to the launcher). */
  readonly configDir: string;
  /** The task id runClineTask returned ("" when the task never started: no task files then). */
  readonly taskId: string;
  /** The agent's workspace: a git repository whose changes become diff.patch. */
  readonly workspace: string;
  /** Final directory; written as `<dest>.tmp-<rand>` and renamed, so it is complete or absent. */
  readonly dest: string;
  /** Commit to diff against. Default: HEAD of the workspace. */
  readonly baseCommit?: string;
  /** The driver's result: written as `outcome.json` (validated) and `timings.json` (timings + counts). */
  readonly run?: TaskRun;
  /** More files: `name → content` (strings/Buffers written as-is, other values as JSON). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** Replace `dest` if it exists. Default false (then an existing dest is an error). */
  readonly overwrite?: boolean;
  readonly signal?: AbortSignal;
  /** Bound on the git commands. Default 60 s. */
  readonly timeoutMs?: number;
}

/** What ended up in the artifact directory (also written as manifest.json). */
export interface ArtifactManifest {
  readonly dir: string;
  readonly files: readonly { readonly name: string; readonly bytes: number }[];
  /** Task files Cline had not written (e.g. the task never started). */
  readonly missing: readonly string[];
  /** The diff's base commit, or null when the workspace is not a git repository. */
  readonly baseCommit: string | null;
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * The workspace's changes against `base` as a binary-safe patch, untracked (not ignored) files
 * included. Uses a throw-away index so the workspace's own index is never touched.
 */
export async function workspaceDiff(
  workspace: string,
  options: { baseCommit?: string; signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<{ patch: Buffer; baseCommit: string } | null> {
  const run = (args: string[], env: Record<string, string> = {}) =>
    execa(
      "git",
      ["-c", "core.autocrlf=false", "-c", "core.quotepath=false", "-c", "safe.directory=*", ...args],
      {
        cwd: workspace,
        env: { ...env, GIT_CONFIG_NOSYSTEM: "1" },
        encoding: "buffer",
        stripFinalNewline: false,
        reject: false,
        timeout: options.timeoutMs ?? 60_000,
        ...(options.signal ? { cancelSignal: options.signal } : {}),
        stdin: "ignore",
      },
    );
  const top = await run(["rev-parse", "--show-toplevel"]);
  if (top.exitCode !== 0) return null;
  const base = await run(["rev-parse", "--verify", `${options.baseCommit ?? "HEAD"}^{commit}`]);
  if (base.exitCode !== 0)
    throw new ClineVendorError(
      ErrorCode.Artifacts,
      `cannot diff ${workspace}: '${options.baseCommit ?? "HEAD"}' is not a commit (${Buffer.from(base.stderr).toString().trim()})`,
      { hint: "the workspace needs a base commit (the snapshot's commit) to diff against" },
    );
  const baseCommit = Buffer.from(base.stdout).toString().trim();
  const gitDir = Buffer.from((await run(["rev-parse", "--absolute-git-dir"])).stdout)
    .toString()
    .trim();
  const indexFile = join(gitDir, `flakegym-index-${randomBytes(6).toString("hex")}`);
  try {
    const env = { GIT_INDEX_FILE: indexFile };
    for (const args of [
      ["read-tree", baseCommit],
      ["add", "-A", "--", "."],
    ]) {
      const r = await run(args, env);
      if (r.exitCode !== 0)
        throw new ClineVendorError(
          ErrorCode.Artifacts,
          `git ${args.join(" ")} failed in ${workspace}: ${Buffer.from(r.stderr).toString().trim()}`,
          { hint: "check that the workspace is a readable git repository" },
        );
    }
    const diff = await run(["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", baseCommit], env);
    if (diff.exitCode !== 0)
      throw new ClineVendorError(
        ErrorCode.Artifacts,
        `git diff failed in ${workspace}: ${Buffer.from(diff.stderr).toString().trim()}`,
      );
    return { patch: Buffer.from(diff.stdout), baseCommit };
  } finally {
    await rm(indexFile, { force: true });
  }
}

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
    const taskDir = options.taskId ? join(options.configDir, "data", "tasks", options.taskId) : undefined;
    for (const name of TASK_FILES) {
      const src = taskDir ? join(taskDir, name) : undefined;
      if (src && existsSync(src)) {
        await copyFile(src, join(tmp, name));
        files.push({ name, bytes: (await readFile(join(tmp, name))).length });
      } else missing.push(name);
    }
    const diff = await workspaceDiff(options.workspace, {
      ...(options.baseCommit ? { baseCommit: options.baseCommit } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    });
    if (diff) {
      await writeFile(join(tmp, "diff.patch"), diff.patch);
      files.push({ name: "diff.patch", bytes: diff.patch.length });
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
    const manifest: ArtifactManifest = { dir: dest, files, missing, baseCommit: diff?.baseCommit ?? null };
    await writeFile(
      join(tmp, "manifest.json"),
      `${JSON.stringify({ ...manifest, dir: undefined }, null, 2)}\n`,
    );
    if (existsSync(dest)) {
      const old = `${dest}.old-${randomBytes(6).toString("hex")}`;
      await rename(dest, old);
      await rename(tmp, dest);
      await rm(old, { recursive: true, force: true });
    } else await rename(tmp, dest);
    return manifest;
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}
