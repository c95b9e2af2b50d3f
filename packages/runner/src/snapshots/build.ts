import { randomBytes } from "node:crypto";
import { mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { commitWorkspace } from "@flakegym/cline-vendor";
import type { z } from "zod";
import { FlakegymError } from "../errors.js";
import { acquireLock } from "../gc/lock.js";
import { tempPathBeside } from "../run-format/temp-name.js";
import { CHECKOUT_POLICY_VERSION } from "../tasks/checkout-policy.js";
import type { CheckoutRecord } from "../tasks/materialize.js";
import { CATALOG_GIT_IDENTITY } from "../tasks/task-spec.js";
import { FLAKEGYM_VERSION } from "../version.js";
import { runSandboxed } from "../workers/local/sandbox.js";
import { findBwrap, prepareShape, SANDBOX_PATHS } from "../workers/local/shape.js";
import {
  ENV_PINS_FILE,
  type EnvInstallPlan,
  type EnvInstallRecord,
  installKeyOf,
  planEnvInstall,
} from "./env-install.js";
import { type Fork, type ForkMethodChoice, forkTree } from "./fork.js";
import { copyPins, lockOf, withPython } from "./install-lock.js";
import { defaultSnapshotCacheDir, snapshotKey } from "./key.js";
import {
  manifestHead,
  readManifest,
  type Snapshot,
  type SnapshotManifest,
  type SnapshotStep,
  snapshotOf,
} from "./manifest.js";
import { type PythonChoice, pythonChoiceLine, pythonKeyOf } from "./python-choice.js";
import { type PythonOptions, resolvePython } from "./python-providers.js";
import { pythonShapeOf, SYSTEM_CA_BUNDLES } from "./python-shape.js";
import type { SnapshotSpec } from "./spec.js";
import { toolchainIdentity } from "./toolchain-identity.js";
import { recordTree } from "./tree-record.js";

export type SnapshotProgress =
  | { kind: "key"; key: string }
  | { kind: "cached"; key: string }
  | { kind: "wait"; key: string; owner?: { pid: number; host: string } }
  | { kind: "step"; step: string; status: "start" | "ok" | "failed"; durationMs?: number }
  | { kind: "output"; text: string }
  /** The interpreter chosen for a python task (or the allowed mismatch), before the key. */
  | { kind: "python"; text: string };

export interface BuildOptions {
  readonly cacheDir?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (ev: SnapshotProgress) => void;
  /** Per-step timeout, ms (default 30 min). */
  readonly stepTimeoutMs?: number;
  readonly unsafeNoSandbox?: boolean;
  /** Interpreters the user named and whether another version is allowed (see python-providers.ts). */
  readonly python?: PythonOptions;
}

const inflight = new Map<string, Promise<Snapshot>>();

/** The build's options with the interpreter chosen for the task (none: the sandbox's python3). */
type ChosenOptions = BuildOptions & { readonly choice: PythonChoice | undefined };

/**
 * The interpreter a python task's venv is made with, when the task names the Python it wants;
 * a task whose Python is not found is refused here, before anything is built (python-choice.ts).
 */
async function pythonChoiceOf(
  spec: SnapshotSpec,
  o: PythonOptions | undefined,
): Promise<PythonChoice | undefined> {
  if (spec.profile !== "python" || spec.pythonWanted === undefined) return undefined;
  const choice = await resolvePython(spec.taskId, spec.pythonWanted, o);
  if (choice.kind === "refused")
    throw new FlakegymError("E_PYTHON_MISSING", choice.reason, { hint: choice.hint });
  return choice;
}

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
  const python = await pythonChoiceOf(spec, opts.python);
  if (python) opts.onProgress?.({ kind: "python", text: pythonChoiceLine(python) });
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
    ...(spec.repo.startsWith("catalog:") ? {} : { checkout: CHECKOUT_POLICY_VERSION }),
    ...(pythonKeyOf(python) ? { python: pythonKeyOf(python)! } : {}),
  });
  opts.onProgress?.({ kind: "key", key });
  let p = inflight.get(key);
  if (!p) {
    p = buildLocked(spec, key, toolchain, cacheDir, { ...opts, choice: python }).finally(() =>
      inflight.delete(key),
    );
    inflight.set(key, p);
  }
  return await p;
}

async function buildLocked(
  spec: SnapshotSpec,
  key: string,
  toolchain: string[],
  cacheDir: string,
  opts: ChosenOptions,
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
  readonly opts: ChosenOptions;
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
  /** How the source step checked the repository out (git sources). */
  checkout?: CheckoutRecord;
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
  opts: ChosenOptions,
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
  const { commit, checkout } = await spec.materialize(st.workspace, {
    ...(opts.signal ? { signal: opts.signal } : {}),
    log: (line) => say(st, line),
  });
  if (commit !== spec.commit) {
    throw new FlakegymError("E_SNAPSHOT", `source materialized to ${commit}, expected ${spec.commit}`);
  }
  if (checkout) st.checkout = checkout;
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

/** The first of SYSTEM_CA_BUNDLES this machine has (bound into every sandbox with /etc/ssl). */
async function systemCaBundle(): Promise<string | undefined> {
  for (const f of SYSTEM_CA_BUNDLES) if ((await stat(f).catch(() => undefined))?.isFile()) return f;
  return undefined;
}

/** A sandbox shape over the build's tree, with `network`. */
async function buildShape(st: BuildState, network: "none" | "host") {
  return prepareShape({
    id: `snap-${st.key.slice(0, 16)}-${randomBytes(3).toString("hex")}`,
    profile: st.spec.profile,
    workspace: st.workspace,
    deps: st.deps,
    stateDir: join(st.tmp, "state"),
    limits: st.spec.limits,
    network,
    ...pythonShapeOf(st.opts.choice, network === "host" ? await systemCaBundle() : undefined),
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
    { wanted: st.spec.pythonWanted, choice: st.opts.choice, taskId: st.spec.taskId },
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
    ...(st.checkout ? { checkout: st.checkout } : {}),
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
  // the tree's content record, once (snapshots/tree-record.ts): --resume checks a tree against it
  await recordTree(tmp);
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
  await writeAtomic(logFile, `${f.log.join("\n")}\n`);
  const tail = f.log.join("\n").split("\n").slice(-25).join("\n");
  if (
    err instanceof FlakegymError &&
    (err.code === "E_NETWORK_REQUIRED" ||
      err.code === "E_REPO_MISSING" ||
      err.code === "E_CATALOG" ||
      err.code === "E_PYTHON_MISMATCH" ||
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

async function writeAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = tempPathBeside(path);
  try {
    await writeFile(tmp, text);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
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
