import { createHash, randomBytes } from "node:crypto";
import { copyFile, lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { commitWorkspace } from "@flakegym/cline-vendor";
import { loadProfiles, type ProfileId } from "@flakegym/profiles";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import type { LoadedTask } from "../tasks/catalog.js";
import { git, materializeSource } from "../tasks/materialize.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import { CATALOG_GIT_IDENTITY } from "../tasks/task-spec.js";
import { FLAKEGYM_VERSION } from "../version.js";
import { runSandboxed } from "../workers/local/sandbox.js";
import { findBwrap, prepareShape, SANDBOX_PATHS, VENV_DIR } from "../workers/local/shape.js";
import {
  ENV_PINS_FILE,
  type EnvInstallPlan,
  EnvInstallRecord,
  installKeyOf,
  planEnvInstall,
  pythonOfVenv,
  resolvedLines,
} from "./env-install.js";
import { type Fork, type ForkMethodChoice, forkTree } from "./fork.js";
import { defaultSnapshotCacheDir, SNAPSHOT_FORMAT, snapshotKey } from "./key.js";
import { acquireLock } from "./lock.js";

/** What to build a snapshot of: a repository at a commit, a profile, install and smoke commands. */
export interface SnapshotSpec {
  readonly taskId: string;
  /** What identifies the repository in the key: a clone URL, or `catalog:<id>`. */
  readonly repo: string;
  /** The commit the source materializes to (part of the key, so it must be known up front). */
  readonly commit: string;
  readonly profile: ProfileId;
  readonly install: readonly string[];
  readonly smoke: readonly string[];
  readonly network: "none" | "required";
  /**
   * Whether the profile's default environment install applies when `install` is empty ("off" for
   * catalog directories, which are self-contained). Default "auto".
   */
  readonly envDefaults?: "auto" | "off";
  /** The Python the task's source runs it under (recorded against the venv's; not part of the key). */
  readonly pythonWanted?: string;
  readonly limits: { memoryMb: number; pids: number; cpuSeconds: number; diskMb: number };
  /** Puts the repository at `commit` into `dest`. */
  materialize(
    dest: string,
    opts: { signal?: AbortSignal; log: (line: string) => void },
  ): Promise<{ commit: string }>;
}

export const SnapshotStep = z
  .object({
    name: z.string().describe("step name: source, install, smoke"),
    command: z.string().optional().describe("the shell command, for install and smoke steps"),
    exitCode: z.number().int().describe("0 when the step succeeded"),
    durationMs: z.number().describe("how long the step took"),
  })
  .strict();

/** `manifest.json` of a built snapshot. */
export const SnapshotManifest = z
  .object({
    format: z.literal(SNAPSHOT_FORMAT).describe("snapshot layout version"),
    key: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .describe("content key (sha256 of the inputs)"),
    taskId: z.string().describe("task the snapshot was first built for"),
    repo: z.string().describe("repository identity used in the key"),
    commit: z.string().describe("the source commit the build started from (part of the key)"),
    baseCommit: z
      .string()
      .optional()
      .describe(
        "the commit the agent starts from and its diff is taken against: `commit` itself, or a child of it holding the files the install and smoke steps changed or added (absent in snapshots built before it existed: `commit`)",
      ),
    baseChanges: z
      .array(z.string())
      .optional()
      .describe(
        "the paths `baseCommit` changes against `commit` (the install's edits, e.g. SWE-bench's pre_install `sed -i`)",
      ),
    profile: z.string().describe("toolchain profile"),
    install: z.array(z.string()).describe("install commands that ran (the task's, or the profile's default)"),
    envInstall: EnvInstallRecord.optional().describe(
      "which install ran (the task's, the profile's default, or none), its network and the lock it followed",
    ),
    smoke: z.array(z.string()).describe("smoke commands that passed"),
    toolchain: z.array(z.string()).describe("toolchain identity (tool --version outputs)"),
    network: z
      .enum(["none", "required"])
      .describe("whether the build used the network (the source fetch or the install step; never smoke)"),
    steps: z.array(SnapshotStep).describe("every build step with its exit status and time"),
    buildMs: z.number().describe("total build time, ms"),
    createdAt: z.string().describe("ISO time the build finished"),
    flakegymVersion: z.string().describe("runner version that built it"),
    fromImage: z
      .object({
        ref: z.string().min(1).describe("the podman reference the tree was copied from"),
        digest: z.string().min(1).describe("podman's image id (sha256 of its config)"),
      })
      .strict()
      .optional()
      .describe(
        "set when the tree is a snapshot image's /workspace (from-image.ts): nothing was installed or built host-side, its dependencies are the image's own (no deps dir)",
      ),
  })
  .strict();
export type SnapshotManifest = z.infer<typeof SnapshotManifest>;

/** A built snapshot in the cache. */
export interface Snapshot {
  readonly key: string;
  /** `<cache>/<key>`. */
  readonly dir: string;
  /** `<dir>/tree`: `workspace/` (the repository) and `deps/` (package caches). */
  readonly tree: string;
  readonly workspace: string;
  readonly manifest: SnapshotManifest;
  /** true when it was already in the cache. */
  readonly cached: boolean;
  readonly smokeLog: string;
}

export type SnapshotProgress =
  | { kind: "key"; key: string }
  | { kind: "cached"; key: string }
  | { kind: "wait"; key: string; owner?: { pid: number; host: string } }
  | { kind: "step"; step: string; status: "start" | "ok" | "failed"; durationMs?: number }
  | { kind: "output"; text: string };

export interface BuildOptions {
  readonly cacheDir?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (ev: SnapshotProgress) => void;
  /** Per-step timeout, ms (default 30 min). */
  readonly stepTimeoutMs?: number;
  readonly unsafeNoSandbox?: boolean;
}

/** The snapshot spec of a built-in catalog task. */
export function snapshotSpecOfTask(task: LoadedTask): SnapshotSpec {
  const { spec } = task;
  const src = spec.source;
  return {
    taskId: spec.id,
    repo: src.kind === "local" ? `catalog:${spec.id}` : src.url,
    commit: src.kind === "local" ? src.commit : src.rev,
    profile: spec.profile,
    install: spec.install,
    smoke: spec.smoke,
    network: spec.network,
    envDefaults: src.kind === "local" ? "off" : "auto",
    ...(spec.metadata?.python_version ? { pythonWanted: spec.metadata.python_version } : {}),
    limits: {
      memoryMb: spec.limits.memoryMb,
      pids: spec.limits.pids,
      cpuSeconds: spec.limits.cpuSeconds,
      diskMb: spec.limits.diskMb,
    },
    materialize: (dest, opts) => materializeSource(task, dest, opts),
  };
}

/**
 * The snapshot spec of a dataset row: clone `repoUrl` at its commit (network), no install commands
 * (the profile's smoke commands check the toolchain). A row without a commit needs `resolvedCommit`.
 */
export function snapshotSpecOfProfile(task: TaskProfile, resolvedCommit?: string): SnapshotSpec {
  const commit = task.commit ?? resolvedCommit;
  if (!commit) {
    throw new FlakegymError(
      "E_SNAPSHOT",
      `task '${task.id}' (${task.source.file} row ${task.source.row}) has no commit`,
      {
        hint: "give the row a base_commit, or resolve the branch head first (git ls-remote) and pass it",
      },
    );
  }
  return {
    taskId: task.id,
    repo: task.repoUrl,
    commit,
    profile: task.profile,
    install: [],
    smoke: [],
    network: task.repoKind === "local" ? "none" : "required",
    envDefaults: "auto",
    limits: { memoryMb: 4096, pids: 1024, cpuSeconds: 3600, diskMb: 8192 },
    async materialize(dest, opts) {
      await mkdir(dest, { recursive: true });
      await git(["init", "-q"], { cwd: dest, ...opts });
      await git(["fetch", "-q", "--depth", "1", task.repoUrl, commit], {
        cwd: dest,
        timeoutMs: 600_000,
        ...opts,
      });
      await git(["checkout", "-q", "--detach", "FETCH_HEAD"], { cwd: dest, ...opts });
      return { commit: await git(["rev-parse", "HEAD"], { cwd: dest, ...opts }) };
    },
  };
}

const identities = new Map<string, Promise<string[]>>();

/** `--version` outputs of the profile's tools inside the sandbox (profiles.json `smoke`), once per process. */
export function toolchainIdentity(profile: ProfileId, scratch: string, unsafe?: boolean): Promise<string[]> {
  let p = identities.get(profile);
  if (!p) {
    p = (async () => {
      const dir = join(scratch, `identity-${process.pid}-${randomBytes(4).toString("hex")}`);
      await mkdir(join(dir, "ws"), { recursive: true });
      const prepared = await prepareShape({
        id: `identity-${process.pid}-${randomBytes(4).toString("hex")}`,
        profile,
        workspace: join(dir, "ws"),
        stateDir: join(dir, "state"),
        limits: { memoryMb: 1024, pids: 128, cpuSeconds: 60, diskMb: 64 },
        network: "none",
        ...(unsafe ? { unsafeNoSandbox: true } : {}),
      });
      try {
        const out: string[] = [];
        for (const cmd of loadProfiles().profiles[profile].smoke) {
          const r = await runSandboxed(
            prepared.shape,
            ["/bin/sh", "-c", cmd],
            { timeoutMs: 30_000, hostCwd: join(dir, "ws") },
            prepared.env,
          );
          if (r.exitCode !== 0) {
            throw new FlakegymError(
              "E_TOOLCHAIN",
              `profile '${profile}': \`${cmd}\` failed in the sandbox (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().slice(-500)}`,
              {
                hint: `install the ${profile} toolchain (sh scripts/ensure-system-deps), or run this task where its profile's tools exist`,
              },
            );
          }
          out.push(`${cmd}: ${r.stdout.trim().split("\n")[0]}`);
        }
        return out;
      } finally {
        await prepared.dispose();
        await rm(dir, { recursive: true, force: true });
      }
    })();
    p.catch(() => identities.delete(profile));
    identities.set(profile, p);
  }
  return p;
}

export async function readManifest(dir: string): Promise<SnapshotManifest | undefined> {
  try {
    return SnapshotManifest.parse(JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")));
  } catch {
    return undefined;
  }
}

export function snapshotOf(dir: string, manifest: SnapshotManifest, cached: boolean): Snapshot {
  return {
    key: manifest.key,
    dir,
    tree: join(dir, "tree"),
    workspace: join(dir, "tree", "workspace"),
    manifest,
    cached,
    smokeLog: join(dir, "smoke.log"),
  };
}

const inflight = new Map<string, Promise<Snapshot>>();

/**
 * Builds (or finds in the cache) the snapshot of `spec`: the repository at its commit, with install
 * commands run and smoke commands passed, keyed by content. Concurrent requests for one key build
 * once (in-process promise map + a cross-process lock). A failed build is never cached: it leaves
 * `failed/<key>/build.log` and throws naming the step with the log's tail.
 */
export async function buildSnapshot(spec: SnapshotSpec, opts: BuildOptions = {}): Promise<Snapshot> {
  const cacheDir = opts.cacheDir ?? defaultSnapshotCacheDir();
  await mkdir(join(cacheDir, "tmp"), { recursive: true });
  const toolchain = await toolchainIdentity(spec.profile, join(cacheDir, "tmp"), opts.unsafeNoSandbox);
  const key = snapshotKey({
    repo: spec.repo,
    commit: spec.commit,
    profile: spec.profile,
    install: installKeyOf({
      profile: spec.profile,
      taskInstall: spec.install,
      defaults: spec.envDefaults ?? "auto",
    }),
    smoke: spec.smoke,
    toolchain,
    network: spec.network,
  });
  opts.onProgress?.({ kind: "key", key });
  let p = inflight.get(key);
  if (!p) {
    p = buildLocked(spec, key, toolchain, cacheDir, opts).finally(() => inflight.delete(key));
    inflight.set(key, p);
  }
  return await p;
}

async function buildLocked(
  spec: SnapshotSpec,
  key: string,
  toolchain: string[],
  cacheDir: string,
  opts: BuildOptions,
): Promise<Snapshot> {
  const final = join(cacheDir, key);
  const found = await readManifest(final);
  if (found) {
    opts.onProgress?.({ kind: "cached", key });
    return snapshotOf(final, found, true);
  }
  const release = await acquireLock(join(cacheDir, "locks", key), {
    ...(opts.signal ? { signal: opts.signal } : {}),
    onWait: (owner) => opts.onProgress?.({ kind: "wait", key, ...(owner ? { owner } : {}) }),
  });
  try {
    const again = await readManifest(final);
    if (again) {
      opts.onProgress?.({ kind: "cached", key });
      return snapshotOf(final, again, true);
    }
    return await buildInto(spec, key, toolchain, cacheDir, opts);
  } finally {
    await release();
  }
}

/** One build's working state: its scratch tree, logs and steps, and where it is (for a failure's report). */
interface BuildState {
  readonly spec: SnapshotSpec;
  readonly key: string;
  readonly cacheDir: string;
  readonly opts: BuildOptions;
  readonly tmp: string;
  readonly workspace: string;
  readonly deps: string;
  readonly log: string[];
  readonly smokeLog: string[];
  readonly steps: z.infer<typeof SnapshotStep>[];
  /** The sandbox shape of the step running now (disposed between the install and the smoke steps). */
  prepared: Awaited<ReturnType<typeof prepareShape>> | undefined;
  /** The step running now, named in a failure. */
  current: string;
  installSource: EnvInstallRecord["source"] | undefined;
}

const say = (st: BuildState, line: string) => {
  st.log.push(line);
};

/** Builds the snapshot in a scratch tree under `cacheDir/tmp` and publishes it as `cacheDir/<key>`. */
async function buildInto(
  spec: SnapshotSpec,
  key: string,
  toolchain: string[],
  cacheDir: string,
  opts: BuildOptions,
): Promise<Snapshot> {
  const started = performance.now();
  const tmp = join(cacheDir, "tmp", `${key.slice(0, 16)}-${process.pid}-${randomBytes(4).toString("hex")}`);
  const st: BuildState = {
    spec,
    key,
    cacheDir,
    opts,
    tmp,
    workspace: join(tmp, "tree", "workspace"),
    deps: join(tmp, "tree", "deps"),
    log: [],
    smokeLog: [],
    steps: [],
    prepared: undefined,
    current: "source",
    installSource: undefined,
  };
  await mkdir(st.deps, { recursive: true });
  try {
    await sourceStep(st);
    const pins = join(cacheDir, "pins", `${key}.txt`);
    const envInstall = await installAndSmoke(st, await installPlanOf(st, pins));
    st.current = "base: commit the built tree";
    const base = await commitBase(st.workspace, spec.commit, opts.signal);
    if (base.changed.length > 0)
      say(
        st,
        `== base ${base.commit}: the build changed ${base.changed.length} path(s): ${base.changed.slice(0, 20).join(", ")}`,
      );
    const manifest = manifestOf(st, { toolchain, envInstall, base, buildMs: performance.now() - started });
    return await publish({ tmp, cacheDir, manifest, log: st.log, smokeLog: st.smokeLog, pins });
  } catch (err) {
    say(st, `== failed: ${(err as Error).message}`);
    throw await buildFailure(err, {
      spec,
      key,
      cacheDir,
      log: st.log,
      current: st.current,
      installSource: st.installSource,
    });
  } finally {
    await st.prepared?.dispose();
    await rm(tmp, { recursive: true, force: true });
  }
}

/** The source step: the repository materialized at its commit (checked) into the workspace. */
async function sourceStep(st: BuildState): Promise<void> {
  const { spec, opts } = st;
  opts.onProgress?.({ kind: "step", step: "source", status: "start" });
  const t0 = performance.now();
  say(st, `== source: ${spec.repo} @ ${spec.commit}`);
  const { commit } = await spec.materialize(st.workspace, {
    ...(opts.signal ? { signal: opts.signal } : {}),
    log: (line) => say(st, line),
  });
  if (commit !== spec.commit) {
    throw new FlakegymError("E_SNAPSHOT", `source materialized to ${commit}, expected ${spec.commit}`);
  }
  st.steps.push({ name: "source", exitCode: 0, durationMs: performance.now() - t0 });
  opts.onProgress?.({ kind: "step", step: "source", status: "ok", durationMs: performance.now() - t0 });
}

/** What the install step runs (env-install.ts's pure plan over the checked-out tree and its pins). */
async function installPlanOf(st: BuildState, pins: string): Promise<EnvInstallPlan> {
  const { spec } = st;
  const plan = planEnvInstall({
    profile: spec.profile,
    taskInstall: spec.install,
    taskNetwork: spec.network,
    defaults: spec.envDefaults ?? "auto",
    rootEntries: await readdir(st.workspace),
    // the deps dir as the install's commands see it (the host path when nothing is sandboxed)
    depsDir: findBwrap() ? SANDBOX_PATHS.deps : st.deps,
    hasPins: await copyPins(pins, join(st.deps, ENV_PINS_FILE)),
  });
  st.installSource = plan.record.source;
  say(st, `== install (${plan.record.source}, network ${plan.record.network}): ${plan.record.reason}`);
  return plan;
}

/** A sandbox shape over the build's tree, with `network`. */
function buildShape(st: BuildState, network: "none" | "host") {
  return prepareShape({
    id: `snap-${st.key.slice(0, 16)}-${randomBytes(3).toString("hex")}`,
    profile: st.spec.profile,
    workspace: st.workspace,
    deps: st.deps,
    stateDir: join(st.tmp, "state"),
    limits: st.spec.limits,
    network,
    ...(st.opts.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
  });
}

/** Runs one install or smoke command in the current shape and records it. */
async function commandStep(st: BuildState, name: "install" | "smoke", command: string): Promise<void> {
  st.current = `${name}: ${command}`;
  const r = await runStep(st.prepared!, st.current, command, st.workspace, st.opts, (line) => say(st, line));
  if (name === "smoke") st.smokeLog.push(`$ ${command}`, r.text, `(exit ${r.exitCode}, ${r.durationMs} ms)`);
  st.steps.push({ name, command, exitCode: r.exitCode, durationMs: r.durationMs });
}

/**
 * The install commands (the only step that may reach the network), the environment's lock, then the
 * smoke commands offline, as every later sandbox runs.
 */
async function installAndSmoke(st: BuildState, plan: EnvInstallPlan): Promise<EnvInstallRecord> {
  st.prepared = await buildShape(st, plan.record.network);
  for (const command of plan.record.commands) await commandStep(st, "install", command);
  await st.prepared.dispose();
  st.prepared = undefined;
  st.prepared = await buildShape(st, "none");
  const envInstall = await withPython(
    await lockOf(plan, st.workspace, st.deps),
    st.deps,
    st.spec.pythonWanted,
    (line) => say(st, line),
  );
  for (const command of st.spec.smoke) await commandStep(st, "smoke", command);
  await st.prepared.dispose();
  st.prepared = undefined;
  return envInstall;
}

/** The snapshot's manifest once every step passed (pure but for the clock). */
function manifestOf(
  st: BuildState,
  b: {
    toolchain: string[];
    envInstall: EnvInstallRecord;
    base: { commit: string; changed: readonly string[] };
    buildMs: number;
  },
): SnapshotManifest {
  const { spec } = st;
  return {
    ...manifestHead(spec, st.key, b.base),
    install: [...b.envInstall.commands],
    envInstall: b.envInstall,
    smoke: [...spec.smoke],
    toolchain: b.toolchain,
    network: spec.network === "required" || b.envInstall.network === "host" ? "required" : "none",
    steps: st.steps,
    buildMs: Math.round(b.buildMs),
    createdAt: new Date().toISOString(),
    flakegymVersion: FLAKEGYM_VERSION,
  };
}

/** What every snapshot manifest starts with: its key, the task's source and the diff base. Pure. */
export function manifestHead(
  spec: Pick<SnapshotSpec, "taskId" | "repo" | "commit" | "profile">,
  key: string,
  base: { commit: string; changed: readonly string[] },
): Pick<
  SnapshotManifest,
  "format" | "key" | "taskId" | "repo" | "commit" | "baseCommit" | "baseChanges" | "profile"
> {
  return {
    format: SNAPSHOT_FORMAT,
    key,
    taskId: spec.taskId,
    repo: spec.repo,
    commit: spec.commit,
    baseCommit: base.commit,
    baseChanges: [...base.changed],
    profile: spec.profile,
  };
}

/**
 * Makes the built tree the agent's base: the files the install and smoke steps changed or added
 * (SWE-bench's pre_install `sed -i` on setup.cfg, generated files) committed on top of the source
 * commit with the catalog's fixed identity, so they are in neither the agent's diff nor its
 * scoring. Runs after every step, when no sandbox is left; git never reads the workspace's own
 * repository (cline-vendor commitWorkspace).
 */
export async function commitBase(
  workspace: string,
  commit: string,
  signal: AbortSignal | undefined,
): Promise<{ commit: string; changed: readonly string[] }> {
  const r = await commitWorkspace({
    workspace,
    baseCommit: commit,
    baseObjects: join(workspace, ".git", "objects"),
    identity: CATALOG_GIT_IDENTITY,
    message: "flakegym snapshot base: the tree after the install step",
    timeoutMs: 10 * 60_000,
    ...(signal ? { signal } : {}),
  });
  return { commit: r.commit, changed: r.changed };
}

/** The commit a snapshot's agent starts from and its diff is taken against. Pure. */
export function baseCommitOf(manifest: Pick<SnapshotManifest, "commit" | "baseCommit">): string {
  return manifest.baseCommit ?? manifest.commit;
}

/** Writes a finished build's logs and manifest (last) and renames it into the cache. */
async function publish(b: {
  tmp: string;
  cacheDir: string;
  manifest: SnapshotManifest;
  log: readonly string[];
  smokeLog: readonly string[];
  pins: string;
}): Promise<Snapshot> {
  const { tmp, manifest } = b;
  await rm(join(tmp, "state"), { recursive: true, force: true });
  await writeFile(join(tmp, "build.log"), `${b.log.join("\n")}\n`);
  await writeFile(join(tmp, "smoke.log"), `${b.smokeLog.join("\n")}\n`);
  // The manifest is written last: a directory without one is never taken as a snapshot.
  await writeFile(join(tmp, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const final = join(b.cacheDir, manifest.key);
  await rename(tmp, final);
  await rm(join(b.cacheDir, "failed", manifest.key), { recursive: true, force: true });
  const resolved = manifest.envInstall?.resolved;
  if (resolved) await writeAtomic(b.pins, `${resolved.join("\n")}\n`);
  return snapshotOf(final, manifest, false);
}

/**
 * The error a failed build throws, after keeping its log at `failed/<key>/build.log`: the step that
 * failed and the log's tail (errors that already say what to do pass through as they are).
 */
async function buildFailure(
  err: unknown,
  f: {
    spec: SnapshotSpec;
    key: string;
    cacheDir: string;
    log: readonly string[];
    current: string;
    installSource: EnvInstallRecord["source"] | undefined;
  },
): Promise<unknown> {
  const failedDir = join(f.cacheDir, "failed", f.key);
  await mkdir(failedDir, { recursive: true });
  const logFile = join(failedDir, "build.log");
  await writeFile(`${logFile}.tmp`, `${f.log.join("\n")}\n`);
  await rename(`${logFile}.tmp`, logFile);
  const tail = f.log.join("\n").split("\n").slice(-25).join("\n");
  if (
    err instanceof FlakegymError &&
    (err.code === "E_NETWORK_REQUIRED" ||
      err.code === "E_REPO_MISSING" ||
      err.code === "E_CATALOG" ||
      err.code === "E_TOOLCHAIN")
  ) {
    return err;
  }
  return new FlakegymError(
    "E_SNAPSHOT_BUILD",
    `snapshot of task '${f.spec.taskId}' failed in step '${f.current}': ${(err as Error).message}\n--- last lines of ${logFile} ---\n${tail}`,
    {
      cause: err,
      hint:
        f.installSource === "profile" && f.current.startsWith("install:")
          ? `the ${f.spec.profile} profile's default install failed (full log: ${logFile}); give the task its own install commands (task.json \`install\`, or the row's install column) to replace it`
          : `the full log is ${logFile}; the snapshot was not cached`,
    },
  );
}

/** Runs one build step in the sandbox; throws naming the step when it fails or times out. */
async function runStep(
  prepared: Awaited<ReturnType<typeof prepareShape>>,
  step: string,
  command: string,
  workspace: string,
  opts: BuildOptions,
  say: (line: string) => void,
): Promise<{ exitCode: number; durationMs: number; text: string }> {
  opts.onProgress?.({ kind: "step", step, status: "start" });
  say(`== ${step}`);
  const r = await runSandboxed(
    prepared.shape,
    ["/bin/sh", "-c", command],
    {
      timeoutMs: opts.stepTimeoutMs ?? 30 * 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
      hostCwd: workspace,
      onOutput: (text) => opts.onProgress?.({ kind: "output", text }),
    },
    prepared.env,
  );
  const text = `${r.stdout}${r.stderr ? `\n${r.stderr}` : ""}`.trim();
  if (text) say(text);
  if (r.exitCode !== 0 || r.timedOut) {
    opts.onProgress?.({ kind: "step", step, status: "failed", durationMs: r.durationMs });
    throw new FlakegymError(
      "E_SNAPSHOT_STEP",
      `${r.timedOut ? "timed out" : `exit ${r.exitCode}`} in step '${step}'`,
    );
  }
  opts.onProgress?.({ kind: "step", step, status: "ok", durationMs: r.durationMs });
  return { exitCode: r.exitCode, durationMs: r.durationMs, text };
}

/** Copies a previous build's resolved set into the deps dir; false when there is none. */
async function copyPins(pins: string, dest: string): Promise<boolean> {
  try {
    await copyFile(pins, dest);
    return true;
  } catch {
    return false;
  }
}

/**
 * The plan's record with the lock it followed or wrote: the resolved set the install wrote into
 * the deps dir (python), else the sha256 of the repository's lock file. A lock that is a symlink
 * or no regular file is not read (the repository is untrusted).
 */
async function lockOf(plan: EnvInstallPlan, workspace: string, deps: string): Promise<EnvInstallRecord> {
  const { record } = plan;
  if (plan.resolvedFile) {
    const file = join(deps, plan.resolvedFile);
    const st = await lstat(file).catch(() => undefined);
    if (!st?.isFile() || st.size > MAX_RESOLVED_BYTES) {
      throw new FlakegymError(
        "E_SNAPSHOT",
        `the install step's resolved set ${plan.resolvedFile} (in the snapshot's deps dir) is ${st ? (st.isFile() ? `${st.size} bytes, over ${MAX_RESOLVED_BYTES}` : "not a regular file") : "missing"}`,
        {
          hint: `see the install step in the build log; the repository's own install code may have replaced /deps/${plan.resolvedFile}`,
        },
      );
    }
    const text = await readFile(file, "utf8");
    return { ...record, lockSha256: sha256(text), resolved: resolvedLines(text) };
  }
  if (!record.lockFile) return record;
  const path = join(workspace, record.lockFile);
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isFile()) return record;
  return { ...record, lockSha256: sha256(await readFile(path)) };
}

/**
 * The record with the venv's Python against the task's (pythonOfVenv), when the install made a venv
 * in the deps dir; a mismatch is said in the build log. pyvenv.cfg is read as data, not followed.
 */
async function withPython(
  record: EnvInstallRecord,
  deps: string,
  wanted: string | undefined,
  say: (line: string) => void,
): Promise<EnvInstallRecord> {
  const cfg = join(deps, VENV_DIR, "pyvenv.cfg");
  const st = await lstat(cfg).catch(() => undefined);
  if (!st?.isFile() || st.size > 64 * 1024) return record;
  const python = pythonOfVenv(await readFile(cfg, "utf8"), wanted);
  if (!python) return record;
  say(
    `== python: venv ${python.used}${python.wanted ? `, task ${python.wanted}` : ""}${python.note ? ` — ${python.note}` : ""}`,
  );
  return { ...record, python };
}

/** A `pip freeze` of even a large environment is a few KiB; more is not a resolved set. */
const MAX_RESOLVED_BYTES = 1 << 20;

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

async function writeAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

/** Forks a snapshot's tree for one trajectory (see forkTree). */
export async function forkSnapshot(
  snapshot: Snapshot,
  opts: { dest: string; method?: ForkMethodChoice; quotaMb?: number; signal?: AbortSignal },
): Promise<Fork & { workspace: string; deps: string }> {
  try {
    await stat(join(snapshot.dir, "manifest.json"));
  } catch {
    throw new FlakegymError("E_SNAPSHOT", `snapshot ${snapshot.dir} is incomplete or was removed`, {
      hint: "rebuild it: flakegym snapshot build --task <id>",
    });
  }
  const fork = await forkTree(snapshot.tree, opts);
  return Object.assign(fork, { workspace: join(fork.tree, "workspace"), deps: join(fork.tree, "deps") });
}
