import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ClinePackage,
  MAPPED_SOURCE_PIN,
  ONE_BYTE_PINS,
  probeMappedCore,
  probeOneByteCore,
  resolveClinePackage,
} from "@flakegym/cline-vendor";
import { flakegymCacheRoot } from "../cache-root.mjs";
import { FlakegymError } from "../errors.js";
import { type ChatTokenizer, loadChatTokenizer } from "../export/tokenizer.js";
import { startGatewayThread } from "../gateway/thread.js";
import { readTurnLog, type TurnRecord } from "../gateway/turn-log.js";
import type { ListenSpec, PolicyGateway } from "../gateway/types.js";
import { writeOwnerRecord } from "../gc/owner.js";
import { parsePolicySpec } from "../policy/spec.js";
import { runSecrets } from "../redact/redactor.js";
import type { RunConfig } from "../run-format/schema.js";
import type { Score } from "../run-format/score.js";
import { hiddenTestsOf } from "../scoring/hidden-tests.js";
import { buildSnapshot, type SnapshotProgress } from "../snapshots/build.js";
import { chooseImageSnapshot, podmanImageTreeReader, snapshotFromImage } from "../snapshots/from-image.js";
import { storeTreeReader } from "../snapshots/from-store.js";
import { defaultSnapshotCacheDir } from "../snapshots/key.js";
import type { Snapshot } from "../snapshots/manifest.js";
import { pythonOptionsOf } from "../snapshots/python-providers.js";
import { interpreterBindsOf } from "../snapshots/python-shape.js";
import { type SnapshotSpec, snapshotSpecOfProfile, snapshotSpecOfTask } from "../snapshots/spec.js";
import { checkTree, treeRecordOf } from "../snapshots/tree-record.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../tasks/catalog.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import { capabilitiesOf } from "../workers/backend.js";
import { parseGatewayAdvertise } from "../workers/nomad/gateway.js";
import type { PooledBackend } from "../workers/pool/types.js";
import type { WorkerBackend } from "../workers/types.js";
import { runAgentAttempt } from "./agent-attempt.js";
import { resolveRowSource } from "./dataset-source.js";
import type {
  AgentAttempt,
  AgentInput,
  ExportInput,
  RolloutDeps,
  RolloutTask,
  ScoreInput,
  SnapshotRef,
  TrajectoryExportResult,
} from "./deps.js";
import { trialOf } from "./plan.js";
import { runScoringAttempt } from "./scoring-attempt.js";
import { snapshotErrorOf } from "./snapshot-error.js";
import { taskPythonOf } from "./task-python.js";
import { trajectoryExportOf } from "./trajectory-export.js";
import {
  advertiseListenOf,
  type ClosableBackend,
  checkGatewayAdvertise,
  chooseBackend,
  poolFor,
} from "./wire-backend.js";
import { depsOfSnapshot, forkIn } from "./wire-forks.js";
import type { WireOptions } from "./wire-options.js";
import {
  catalogTaskOf,
  imageOf,
  noReference,
  rowRuntimeOf,
  rowTaskOf,
  type TaskRuntime,
} from "./wire-tasks.js";
import { createUpstreams, type UpstreamFor } from "./wire-upstreams.js";
import { agentWorkerSpec, scoringWorkerSpec, type WorkerSpecBase } from "./worker-specs.js";

export { chatOf } from "./trajectory-export.js";
export type { WireOptions } from "./wire-options.js";

/**
 * Wires a rollout to the real pieces: the task catalog, content-keyed snapshots and their forks,
 * a worker backend (local bubblewrap by default; wire-backend.ts), one policy gateway for the whole
 * run (a unix socket the sandboxes reach), the agent attempt (agent-attempt.ts), the scoring attempt
 * (scoring-attempt.ts) and the trainer export (trajectory-export.ts). Adapters only: decisions live
 * in `runRollout` and in the pure functions of those modules.
 */

/** One rollout's wiring: what the functions behind its {@link RolloutDeps} share. */
interface Wire {
  readonly config: RunConfig;
  readonly o: WireOptions;
  /** This run's scratch dir (forks, the gateway socket); removed on close. */
  readonly scratch: string;
  readonly chosen: ClosableBackend;
  readonly pool: PooledBackend | undefined;
  /** What workers start on: the pool when there is one, else the chosen backend. */
  readonly backend: WorkerBackend;
  readonly gateway: PolicyGateway;
  readonly catalog: string;
  /** Tasks loaded so far, catalog tasks and dataset rows alike. */
  readonly loaded: Map<string, TaskRuntime>;
  readonly rows: ReadonlyMap<string, TaskProfile>;
  readonly snapshots: Map<string, Snapshot>;
  /** Catalog tasks' reference patches (the gold policy replays them). */
  readonly solutions: Map<string, string>;
  readonly upstreamFor: UpstreamFor;
  tokenizer?: Promise<ChatTokenizer>;
}

export async function createRolloutDeps(config: RunConfig, o: WireOptions): Promise<RolloutDeps> {
  const w = await openWire(config, o);
  return {
    loadTask: (id) => loadWiredTask(w, id),
    snapshot: (task, signal, progress, trajectories, startedFrom) =>
      snapshotOfTask(w, task, signal, progress, trajectories, startedFrom),
    runAgent: (input) => runWiredAgent(w, input),
    score: (input) => scoreWired(w, input),
    exportTrajectory: (input) => exportWired(w, input),
    provenance: () => wiredProvenance(w),
    close: () => closeWire(w),
  };
}

/** Where the run's gateway listens: its unix socket in scratch, loopback, and the advertised address. Pure. */
export function gatewayListenOf(scratch: string, advertised: string | undefined): ListenSpec[] {
  return [
    { socketPath: join(scratch, "gateway.sock") },
    { host: "127.0.0.1", port: 0 },
    ...(advertised ? [advertiseListenOf(advertised)] : []),
  ];
}

/** The progress line a snapshot build's event earns, if any. Pure. */
export function snapshotProgressLine(ev: SnapshotProgress): string | undefined {
  if (ev.kind === "step") return `${ev.step} ${ev.status}`;
  if (ev.kind === "wait") return "waiting for another build of the same snapshot";
  if (ev.kind === "python") return ev.text;
  return undefined;
}

/** Makes the run's scratch dir, backend (and pool) and gateway thread. */
async function openWire(config: RunConfig, o: WireOptions): Promise<Wire> {
  runSecrets.add(o.judgeApiKey);
  // --gateway-advertise: validated (never loopback); the gateway also listens on it
  const advertised = o.gatewayAdvertise === undefined ? undefined : parseGatewayAdvertise(o.gatewayAdvertise);
  checkGatewayAdvertise(o.backend?.kind ?? config.backend, advertised);
  const scratch = join(o.scratchDir ?? tmpdir(), `flakegym-rollout-${randomBytes(4).toString("hex")}`);
  await mkdir(scratch, { recursive: true });
  await writeOwnerRecord(scratch, "rollout"); // `flakegym gc` removes it if this process dies
  const chosen = chooseBackend(config, o, advertised);
  const pool = poolFor(chosen, o);
  // in a thread of its own: the cores' model calls never wait behind this loop's work (their gRPC
  // streams, sandboxes, scoring); see docs/reference/gateway.md
  const gateway = await startGatewayThread({
    listen: gatewayListenOf(scratch, advertised),
    signal: o.signal,
    ...(o.gatewayMeasureRunTime ? { measureRunTime: true } : {}),
  });
  return {
    config,
    o,
    scratch,
    chosen,
    pool,
    backend: pool ?? chosen,
    gateway,
    catalog: config.catalog ?? BUILTIN_CATALOG_DIR,
    loaded: new Map(),
    rows: new Map((o.datasetTasks ?? []).map((t) => [t.id, t])),
    snapshots: new Map(),
    solutions: new Map(),
    upstreamFor: createUpstreams(o),
  };
}

const taskOf = (w: Wire, t: RolloutTask) => w.loaded.get(t.id)!;
const imageFor = (w: Wire, taskId: string) =>
  imageOf(w.config.images, w.o.workerImages, taskId, w.o.storeWorkers);

/** What every worker of task `t` shares, on fork `f`. */
function specBase(w: Wire, t: TaskRuntime, task: RolloutTask, f: WorkerSpecBase["fork"]): WorkerSpecBase {
  return { runId: w.o.runId, taskId: task.id, task: t, image: imageFor(w, task.id), fork: f };
}

function agentSpec(
  w: Wire,
  t: TaskRuntime,
  task: RolloutTask,
  id: string,
  f: WorkerSpecBase["fork"],
  url?: string,
): ReturnType<typeof agentWorkerSpec> {
  return agentWorkerSpec(specBase(w, t, task, f), id, w.config.limits, {
    socketPath: w.gateway.socketPath!,
    url,
  });
}

/** Forks of `snapshot` for task `t`'s workers, each under the task's disk quota. */
function forkOf(w: Wire, snapshot: Snapshot, t: TaskRuntime) {
  return async (name: string) => {
    const hostForks = w.backend.capabilities.hostForks;
    const f = await forkIn(w.scratch, snapshot, name, t.limits.diskMb, w.o.signal, hostForks);
    return Object.assign(f, {
      deps: depsOfSnapshot(snapshot, f.tree),
      hostBinds: interpreterBindsOf(snapshot.manifest.envInstall),
    });
  };
}

async function loadWiredTask(w: Wire, id: string): Promise<RolloutTask> {
  const row = w.rows.get(id);
  if (row) {
    const rt = rowRuntimeOf(row);
    if (w.config.policies.some((p) => parsePolicySpec(p).kind === "gold")) throw noReference(rt);
    w.loaded.set(row.id, rt);
    return rowTaskOf(row, w.config.limits.testTimeoutMs, imageFor(w, row.id));
  }
  if (w.config.dataset) {
    throw new FlakegymError("E_DATASET", `task '${id}' is not among the rows of ${w.config.dataset.file}`, {
      hint: "name a task that is one of the dataset's row ids, or run catalog tasks without --dataset",
    });
  }
  const t = await loadTask(id, w.catalog);
  w.loaded.set(id, { id, profile: t.spec.profile, limits: t.spec.limits, catalog: t });
  w.solutions.set(id, await readFile(t.paths.solution, "utf8"));
  const hidden = await hiddenTestsOf(t, w.config.limits.testTimeoutMs);
  return catalogTaskOf(id, t, w.catalog, hidden, imageFor(w, id));
}

async function snapshotOfTask(
  w: Wire,
  task: RolloutTask,
  signal: AbortSignal,
  progress: (detail: string) => void,
  trajectories: number,
  startedFrom: string | undefined,
): Promise<SnapshotRef> {
  const t = taskOf(w, task);
  let spec: SnapshotSpec;
  if (t.row) {
    progress(t.row.repoKind === "local" ? `reading ${t.row.repoUrl}` : `probing ${t.row.repoUrl}`);
    spec = snapshotSpecOfProfile(await resolveRowSource(t.row, signal));
  } else {
    spec = snapshotSpecOfTask(t.catalog!);
  }
  const image = imageFor(w, task.id);
  const fromStore = image !== "host /usr" && image.kind === "nix-store" ? image.snapshot : undefined;
  const fromImage = chooseImageSnapshot(image, w.backend);
  const cacheDir = w.o.snapshotCacheDir ? { cacheDir: w.o.snapshotCacheDir } : {};
  if (fromImage.use) progress(`copying /workspace of snapshot image ${fromImage.ref}`);
  if (fromStore) progress(`copying the flake's snapshot ${fromStore}`);
  const s = await (fromStore
    ? snapshotFromImage(spec, { ref: fromStore, digest: fromStore }, storeTreeReader(), {
        signal,
        ...cacheDir,
      })
    : fromImage.use
      ? snapshotFromImage(spec, fromImage, w.o.imageTreeReader ?? podmanImageTreeReader(), {
          signal,
          ...cacheDir,
        })
      : buildSnapshot(spec, {
          signal,
          ...cacheDir,
          python: pythonOptionsOf(w.o.python, w.o.env),
          onProgress: (ev) => {
            const line = snapshotProgressLine(ev);
            if (line !== undefined) progress(line);
          },
        })
  ).catch((err: unknown) => {
    // a full cache disk names the cache, the task and what to do (not a bare `ENOSPC … write`)
    throw snapshotErrorOf(err, w.o.snapshotCacheDir ?? defaultSnapshotCacheDir(w.o.env), task.id);
  });
  w.snapshots.set(s.key, s);
  const tree = await treeOfSnapshot(s, startedFrom, signal, progress);
  // the pool boots workers shaped for this task while the first trajectories fork, no more
  // than the task's trajectories still to start (retries beyond them start cold)
  const shape = agentSpec(w, t, task, "warm", {
    workspace: s.workspace,
    deps: depsOfSnapshot(s, s.tree),
    hostBinds: interpreterBindsOf(s.manifest.envInstall),
  });
  await w.pool?.warm(shape, trajectories);
  const python = taskPythonOf(s.manifest.envInstall?.python);
  return { key: s.key, cached: s.cached, ...tree, ...(python ? { python } : {}) };
}

/**
 * The snapshot tree's recorded digest (snapshots/tree-record.ts); for a resumed task (`startedFrom`)
 * also the paths that differ from the record now — a stat walk, hashing only files whose times moved.
 */
async function treeOfSnapshot(
  s: Snapshot,
  startedFrom: string | undefined,
  signal: AbortSignal,
  progress: (detail: string) => void,
): Promise<Pick<SnapshotRef, "treeDigest" | "treeChanged">> {
  const record = await treeRecordOf(s.dir, signal);
  if (startedFrom === undefined) return { treeDigest: record.digest };
  progress("checking the snapshot tree against its record");
  const check = await checkTree(s.dir, record, signal);
  return { treeDigest: record.digest, treeChanged: check.changed };
}

async function runWiredAgent(w: Wire, input: AgentInput): Promise<AgentAttempt> {
  const t = taskOf(w, input.task);
  const snapshot = w.snapshots.get(input.snapshot.key)!;
  // the policy first: a policy this task cannot use fails before anything is made to clean up
  const trial = trialOf(w.config.policies, input.slot.index);
  const upstream = await w.upstreamFor(input.slot.policy, t, w.solutions.get(t.id), trial);
  const keep = w.o.keepWorkspace;
  return await runAgentAttempt(
    {
      config: w.config,
      gateway: w.gateway,
      backend: w.backend,
      snapshot,
      upstream,
      fork: forkOf(w, snapshot, t),
      workerSpec: (f, url) => agentSpec(w, t, input.task, input.slot.trajectoryId, f, url),
      keepWorkspace: keep && ((workspace) => keep(input.slot, workspace)),
      onNote: w.o.onNote,
    },
    input,
  );
}

async function scoreWired(w: Wire, input: ScoreInput): Promise<Score> {
  const t = taskOf(w, input.task);
  const snapshot = w.snapshots.get(input.snapshot.key)!;
  return await runScoringAttempt(
    {
      config: w.config,
      backend: w.backend,
      snapshot,
      scratch: w.scratch,
      judgeApiKey: w.o.judgeApiKey,
      fork: forkOf(w, snapshot, t),
      workerSpec: (f, readOnlyFiles) =>
        scoringWorkerSpec(specBase(w, t, input.task, f), input.slot.trajectoryId, w.config, readOnlyFiles),
      onNote: w.o.onNote,
    },
    input,
  );
}

async function exportWired(w: Wire, { dir, result }: ExportInput): Promise<TrajectoryExportResult> {
  const turns = await readTurnLog(join(dir, "turns.jsonl")).catch(() => [] as TurnRecord[]);
  if (!w.config.tokenizer) return trajectoryExportOf(turns, result, w.config.segments, undefined);
  w.tokenizer ??= loadChatTokenizer(w.config.tokenizer, { signal: w.o.signal });
  return trajectoryExportOf(turns, result, w.config.segments, await w.tokenizer);
}

async function wiredProvenance(w: Wire): ReturnType<RolloutDeps["provenance"]> {
  const pkg = resolveClinePackage();
  const described = await w.backend.describe().catch(() => ({}) as Record<string, string>);
  return {
    cline: { version: pkg.version, integrity: pkg.integrity, bundle: bundleProvenance(pkg, w.config, w.o) },
    ...(described.imageDigest ? { imageDigest: described.imageDigest } : {}),
  };
}

async function closeWire(w: Wire): Promise<void> {
  await w.pool?.close().catch(() => {});
  await w.chosen.close?.().catch(() => {});
  await w.gateway.close();
  await rm(w.scratch, { recursive: true, force: true });
}

/**
 * What run.json says of the core's bundle: local workers run the one-byte one where it is built,
 * its source mapped from a file where that is built too (the launcher's defaults, as the run's
 * workers are launched).
 */
function bundleProvenance(pkg: ClinePackage, config: RunConfig, o: WireOptions): string {
  if (!(o.backend?.capabilities ?? capabilitiesOf(config.backend)).usesOneByteCore)
    return "cline-core.js (the package's own)";
  const cacheRoot = flakegymCacheRoot(process.env);
  const d = probeOneByteCore(pkg, cacheRoot);
  if (!d.on) return `cline-core.js (the package's own): ${d.reason}`;
  const m = probeMappedCore(d, cacheRoot);
  return `one-byte (sha256 ${ONE_BYTE_PINS.output}), ${m.on ? `source mapped from a file (sha256 ${MAPPED_SOURCE_PIN})` : `source not mapped: ${m.reason}`}`;
}
