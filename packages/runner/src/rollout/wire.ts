import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createClineClient, resolveClinePackage, runClineTask } from "@flakegym/cline-vendor";
import { createDeadline, createNomadClient, nomadConfigFromEnv } from "@flakegym/nomad-jobs";
import { match } from "ts-pattern";
import type { AtroposMessage } from "../emit/atropos/schema.js";
import type { TokenSequence } from "../emit/group.js";
import { FlakegymError, UsageError } from "../errors.js";
import { assistantMessageOf, exportTrajectory as exportTokens } from "../export/export-trajectory.js";
import { type ChatTokenizer, loadChatTokenizer } from "../export/tokenizer.js";
import { startGatewayThread } from "../gateway/thread.js";
import { readTurnLog, type TurnRecord } from "../gateway/turn-log.js";
import type { GatewayTerminal, PolicyGateway } from "../gateway/types.js";
import { writeOwnerRecord } from "../gc/owner.js";
import type { UnmountRecord } from "../gc/unmount.js";
import type { RecordedImage, WorkerImageProvenance } from "../images/worker-images.js";
import type { ChatMessage } from "../policy/chat.js";
import { createUpstream } from "../policy/create-upstream.js";
import { trajectorySampling } from "../policy/sampling.js";
import { parsePolicySpec, samplingOf } from "../policy/spec.js";
import type { PolicyUpstream } from "../policy/upstream.js";
import { redactTree } from "../redact/redact-tree.js";
import { runSecrets } from "../redact/redactor.js";
import { hiddenTestsOf } from "../scoring/hidden-tests.js";
import { prepareReadOnlyHidden, type ReadOnlyFiles } from "../scoring/read-only.js";
import { scoreDiff } from "../scoring/scorer.js";
import {
  buildSnapshot,
  forkSnapshot,
  type Snapshot,
  snapshotSpecOfProfile,
  snapshotSpecOfTask,
} from "../snapshots/build.js";
import { BUILTIN_CATALOG_DIR, type LoadedTask, loadTask } from "../tasks/catalog.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import { clineAgentLauncher } from "../workers/local/cline-agent.js";
import { createLocalBackend } from "../workers/local/local-backend.js";
import { createNomadBackend } from "../workers/nomad/backend.js";
import { parseGatewayAdvertise } from "../workers/nomad/gateway.js";
import { formatProgress } from "../workers/nomad/progress.js";
import { rawExecClineDriver } from "../workers/nomad/raw-exec-cline.js";
import {
  createPodmanBackend,
  flakeImagePodmanOptions,
  hostToolchainPodmanOptions,
} from "../workers/podman/podman-backend.js";
import { createWorkerPool, type PooledBackend, type PoolState } from "../workers/pool/pool.js";
import { isPoolable } from "../workers/pool/types.js";
import type { Worker, WorkerBackend, WorkerExit, WorkerSpec } from "../workers/types.js";
import { classifyOutcome, gatewayVerdictOf, workerExitGraceMs } from "./classify-outcome.js";
import { resolveRowSource } from "./dataset-source.js";
import type { AgentAttempt, RolloutDeps, RolloutTask, SnapshotRef } from "./deps.js";
import { nomadRolloutDriver } from "./nomad-driver.js";
import { type TrajectorySlot, trialOf } from "./plan.js";
import type { Outcome, RunConfig } from "./schema.js";
import { agentWorkerWallClockMs, scoringWorkerWallClockMs } from "./worker-deadlines.js";

/**
 * Wires a rollout to the real pieces: the task catalog, content-keyed snapshots and their forks,
 * a worker backend (local bubblewrap by default), one policy gateway for the whole run (a unix
 * socket the sandboxes reach), the Cline session driver, the hidden-test scorer and the trainer
 * export. Adapters only: decisions live in `runRollout`.
 */

export interface WireOptions {
  /** The run's id, recorded in each worker's spec. */
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly env: NodeJS.ProcessEnv;
  readonly judgeApiKey?: string;
  /** Snapshot cache directory (default: the snapshots module's default). */
  readonly snapshotCacheDir?: string;
  /** Where forks and gateway sockets go (default: the OS temp dir). */
  readonly scratchDir?: string;
  /** A backend to use instead of the one `config.backend` names (tests). */
  readonly backend?: WorkerBackend;
  /**
   * `--gateway-advertise <host:port>`: the gateway also listens there, and remote workers (Nomad)
   * reach it there. Required with `--backend nomad`; loopback is refused.
   */
  readonly gatewayAdvertise?: string;
  /** Progress lines of remote backends (Nomad placement, image pulls, purges). */
  readonly onNote?: (message: string) => void;
  /**
   * Called with an agent attempt's workspace after its worker stopped, before the fork is released
   * (`flakegym eval --keep-workspaces`); it must not follow links or read files as anything but bytes.
   */
  readonly keepWorkspace?: (slot: TrajectorySlot, workspace: string) => Promise<void>;
  /** With `config.dataset`: the rows the run uses (see dataset-tasks.ts), looked up by task id. */
  readonly datasetTasks?: readonly TaskProfile[];
  /**
   * With `config.images` "nix": each task's image (resolveWorkerImages, checked before the run);
   * its `ref` is what the task's workers start from.
   */
  readonly workerImages?: ReadonlyMap<string, RecordedImage>;
  /**
   * `--pool`/`--pool-idle`: keep up to `size` pre-booted agent workers per task shape (local
   * backend), so the Cline core does not boot on a trajectory's critical path (workers/pool).
   */
  readonly pool?: { readonly size: number; readonly idleMs: number };
  /** The warm pool's state as it changes (progress). */
  readonly onPool?: (state: PoolState) => void;
}

/**
 * The Nomad backend of `rollout --backend nomad`: client from NOMAD_ADDR/NOMAD_TOKEN/…; the driver
 * from FLAKEGYM_NOMAD_DRIVER (nomadRolloutDriver): raw_exec runs this machine's pinned Cline,
 * docker/podman each task's snapshot image by digest (--images nix).
 */
function nomadRolloutBackend(
  config: RunConfig,
  o: WireOptions,
  advertise: string,
): WorkerBackend & { close(): Promise<void> } {
  const chosen = nomadRolloutDriver(o.env.FLAKEGYM_NOMAD_DRIVER, config.images);
  return createNomadBackend(
    {
      driver: chosen.kind === "raw_exec" ? rawExecClineDriver() : chosen.driver,
      gatewayAdvertise: advertise,
      pollMs: 5_000,
    },
    {
      client: createNomadClient(nomadConfigFromEnv(o.env)),
      ...(o.onNote ? { onProgress: (p) => o.onNote!(formatProgress(p)) } : {}),
    },
  );
}

/** The warm pool in front of a backend that can pre-boot workers; others run without one (said once). */
function poolFor(backend: WorkerBackend, o: WireOptions): PooledBackend | undefined {
  if (!isPoolable(backend)) {
    o.onNote?.(`warm pool: the ${backend.kind} backend cannot pre-boot workers; every worker starts cold`);
    return undefined;
  }
  return createWorkerPool(backend, {
    size: o.pool!.size,
    idleMs: o.pool!.idleMs,
    ...(o.onNote ? { onNote: o.onNote } : {}),
    ...(o.onPool ? { onState: o.onPool } : {}),
  });
}

/**
 * Releases a fork, saying when a mount stayed busy (detached lazily) or could not be removed
 * (left, with the fork, to `flakegym gc`).
 */
async function releaseFork(f: { release(): Promise<UnmountRecord[]> }, note?: (m: string) => void) {
  try {
    for (const r of await f.release()) {
      if (r.result === "lazy" || r.result === "failed") note?.(`fork: ${r.path}: ${r.result} (${r.detail})`);
    }
  } catch (err) {
    note?.(`fork: ${(err as Error).message}`);
  }
}

/** What the wiring needs of a loaded task, catalog task or dataset row alike. */
interface TaskRuntime {
  readonly id: string;
  readonly profile: LoadedTask["spec"]["profile"];
  readonly limits: { memoryMb: number; pids: number; cpuSeconds: number; diskMb: number };
  readonly catalog?: LoadedTask;
  readonly row?: TaskProfile;
}

/** Worker limits of a dataset row (snapshotSpecOfProfile uses the same). */
const ROW_LIMITS = { memoryMb: 4096, pids: 1024, cpuSeconds: 3600, diskMb: 8192 };

/** Gold replays a reference patch; dataset rows have none. */
function noReference(t: { id: string; row?: TaskProfile }): FlakegymError {
  const where = t.row ? ` (${t.row.source.file} row ${t.row.source.row})` : "";
  return new FlakegymError(
    "E_NO_REFERENCE",
    `task '${t.id}'${where} has no reference solution, so the gold policy cannot run it`,
    {
      hint: "dataset rows need a model policy: --policy openai:<url>#<model>, anthropic:…, scripted:<plan>, or empty",
    },
  );
}

/** The model id the core is configured with for plan-replaying policies (unknown → XML tools). */
const SCRIPTED_MODEL_ID = "flakegym-scripted";

function toAtropos(m: ChatMessage): AtroposMessage {
  return { ...m, content: m.content ?? "" } as AtroposMessage;
}

/** The chat of a call: its request plus the answer, as the policy saw it. Pure. */
export function chatOf(turn: TurnRecord): AtroposMessage[] {
  const msgs = [...turn.request.messages];
  if (turn.response) msgs.push(assistantMessageOf(turn.response));
  return msgs.map(toAtropos);
}

/** The worker's exit if it comes within `ms` (bounded; a worker without `exited` never says). */
async function exitWithin(worker: Worker, ms: number): Promise<WorkerExit | undefined> {
  if (!worker.exited || ms <= 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      worker.exited,
      new Promise<undefined>((r) => {
        timer = setTimeout(() => r(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function createRolloutDeps(config: RunConfig, o: WireOptions): Promise<RolloutDeps> {
  runSecrets.add(o.judgeApiKey);
  // --gateway-advertise: validated (never loopback); the gateway also listens on it
  const advertised = o.gatewayAdvertise === undefined ? undefined : parseGatewayAdvertise(o.gatewayAdvertise);
  const advertiseListen = advertised
    ? {
        host: advertised.slice(0, advertised.lastIndexOf(":")).replace(/^\[|\]$/g, ""),
        port: Number(advertised.slice(advertised.lastIndexOf(":") + 1)),
      }
    : undefined;
  if ((o.backend?.kind ?? config.backend) === "nomad" && !advertised) {
    throw new UsageError(
      "--backend nomad needs --gateway-advertise <host:port>",
      "name an address of this machine the Nomad clients can reach (not loopback), e.g. --gateway-advertise 10.0.0.5:8089; the gateway listens there",
    );
  }
  const scratch = join(o.scratchDir ?? tmpdir(), `flakegym-rollout-${randomBytes(4).toString("hex")}`);
  await mkdir(scratch, { recursive: true });
  await writeOwnerRecord(scratch, "rollout"); // `flakegym gc` removes it if this process dies
  const chosen: WorkerBackend & { close?(): Promise<void> } =
    o.backend ??
    match(config.backend)
      .with("local", () => createLocalBackend({ agent: clineAgentLauncher() }))
      .with("nomad", () => nomadRolloutBackend(config, o, advertised!))
      // the flake's images (--images nix), else a minimal locally imported image with the
      // host's /usr (and node) bound read-only
      .with("podman", () =>
        createPodmanBackend(
          config.images === "nix" ? flakeImagePodmanOptions() : hostToolchainPodmanOptions(),
        ),
      )
      .exhaustive();
  const pool = o.pool && o.pool.size > 0 ? poolFor(chosen, o) : undefined;
  const backend: WorkerBackend & { close?(): Promise<void> } = pool ?? chosen;
  // in a thread of its own: the cores' model calls never wait behind this loop's work (their gRPC
  // streams, sandboxes, scoring); see docs/gateway.md
  const gateway: PolicyGateway = await startGatewayThread({
    listen: [
      { socketPath: join(scratch, "gateway.sock") },
      { host: "127.0.0.1", port: 0 },
      ...(advertiseListen ? [advertiseListen] : []),
    ],
    signal: o.signal,
  });
  const catalog = config.catalog ?? BUILTIN_CATALOG_DIR;
  const loaded = new Map<string, TaskRuntime>();
  const rows = new Map((o.datasetTasks ?? []).map((t) => [t.id, t]));
  const snapshots = new Map<string, Snapshot>();
  const solutions = new Map<string, string>();
  const shared = new Map<string, PolicyUpstream>();
  let tokenizer: Promise<ChatTokenizer> | undefined;

  const taskOf = (t: RolloutTask) => loaded.get(t.id)!;
  /** The task's image (--images nix; checked before the run), else this machine's /usr. */
  const imageOf = (taskId: string): WorkerImageProvenance => {
    if (config.images !== "nix") return "host /usr";
    const image = o.workerImages?.get(taskId);
    if (!image) {
      throw new FlakegymError("E_IMAGE_MISSING", `--images nix: no worker image chosen for task ${taskId}`, {
        hint: "`flakegym images list` shows what is loaded; `flakegym images load --profile <profile>` loads one",
      });
    }
    return image;
  };
  const imageSpec = (taskId: string): Pick<WorkerSpec, "image"> => {
    const image = imageOf(taskId);
    return image === "host /usr" ? {} : { image: image.ref };
  };
  const workerLimits = (t: TaskRuntime, wallClockMs: number): WorkerSpec["limits"] => ({
    memoryMb: t.limits.memoryMb,
    pids: t.limits.pids,
    cpuSeconds: t.limits.cpuSeconds,
    diskMb: t.limits.diskMb,
    wallClockMs,
  });

  /** The spec of an agent worker for trajectory `id` of task `t` (workspace: its fork). */
  const agentSpec = (
    t: TaskRuntime,
    task: RolloutTask,
    id: string,
    f: { workspace: string; deps: string },
    url?: string,
  ): WorkerSpec => ({
    runId: o.runId,
    taskId: task.id,
    trajectoryId: id,
    profile: t.profile,
    workspace: f.workspace,
    depsDir: f.deps,
    gateway: { socketPath: gateway.socketPath!, ...(url ? { url } : {}) },
    limits: workerLimits(t, agentWorkerWallClockMs(config.limits.timeoutMs)),
    agent: true,
    ...imageSpec(task.id),
  });

  /** openai/anthropic upstreams are shared; plan upstreams keep a cursor per trajectory, so each attempt gets a fresh one. */
  async function upstreamFor(policy: string, task: TaskRuntime, trial: number): Promise<PolicyUpstream> {
    const spec = parsePolicySpec(policy);
    const reference = solutions.get(task.id);
    if (spec.kind === "gold" && reference === undefined) throw noReference(task);
    const ctx = {
      env: o.env,
      signal: o.signal,
      trial,
      ...(spec.kind === "gold" ? { task: { referencePatch: reference! } } : {}),
    };
    if (spec.kind === "openai" || spec.kind === "anthropic") {
      let u = shared.get(policy);
      if (!u) {
        u = await createUpstream(spec, ctx);
        shared.set(policy, u);
      }
      return u;
    }
    return await createUpstream(spec, ctx);
  }

  /** A fork whose writes are bounded by the task's disk limit (overlay: a tmpfs upper layer). */
  async function fork(snapshot: Snapshot, name: string, diskMb: number) {
    const dest = join(scratch, "forks", `${name}-${randomBytes(3).toString("hex")}`);
    return await forkSnapshot(snapshot, { dest, quotaMb: diskMb, signal: o.signal });
  }

  async function loadRow(row: TaskProfile): Promise<RolloutTask> {
    const rt: TaskRuntime = { id: row.id, profile: row.profile, limits: ROW_LIMITS, row };
    if (config.policies.some((p) => parsePolicySpec(p).kind === "gold")) throw noReference(rt);
    loaded.set(row.id, rt);
    return {
      id: row.id,
      rowId: row.id,
      datasetRow: row.source.row,
      profile: row.profile,
      prompt: row.prompt,
      network: row.repoKind === "local" ? "none" : "required",
      // no hidden tests: the scorer leaves the tests term out
      hidden: { testFiles: [], commands: [], timeoutMs: config.limits.testTimeoutMs },
      image: imageOf(row.id),
    };
  }

  const deps: RolloutDeps = {
    async loadTask(id) {
      const row = rows.get(id);
      if (row) return await loadRow(row);
      if (config.dataset) {
        throw new FlakegymError("E_DATASET", `task '${id}' is not among the rows of ${config.dataset.file}`);
      }
      const t = await loadTask(id, catalog);
      loaded.set(id, { id, profile: t.spec.profile, limits: t.spec.limits, catalog: t });
      solutions.set(id, await readFile(t.paths.solution, "utf8"));
      const hidden = await hiddenTestsOf(t, config.limits.testTimeoutMs);
      return {
        id,
        rowId: relative(catalog, join(t.dir, "task.json")),
        profile: t.spec.profile,
        prompt: t.spec.prompt,
        network: t.spec.network,
        hidden,
        image: imageOf(id),
      };
    },

    async snapshot(task, signal, progress, trajectories): Promise<SnapshotRef> {
      const t = taskOf(task);
      let spec: ReturnType<typeof snapshotSpecOfTask>;
      if (t.row) {
        progress(t.row.repoKind === "local" ? `reading ${t.row.repoUrl}` : `probing ${t.row.repoUrl}`);
        spec = snapshotSpecOfProfile(await resolveRowSource(t.row, signal));
      } else {
        spec = snapshotSpecOfTask(t.catalog!);
      }
      const s = await buildSnapshot(spec, {
        signal,
        ...(o.snapshotCacheDir ? { cacheDir: o.snapshotCacheDir } : {}),
        onProgress: (ev) => {
          if (ev.kind === "step") progress(`${ev.step} ${ev.status}`);
          else if (ev.kind === "wait") progress("waiting for another build of the same snapshot");
        },
      });
      snapshots.set(s.key, s);
      // the pool boots workers shaped for this task while the first trajectories fork, no more
      // than the task's trajectories still to start (retries beyond them start cold)
      const shape = agentSpec(t, task, "warm", { workspace: s.workspace, deps: join(s.tree, "deps") });
      await pool?.warm(shape, trajectories);
      return { key: s.key, cached: s.cached };
    },

    async runAgent(input): Promise<AgentAttempt> {
      const t = taskOf(input.task);
      const snapshot = snapshots.get(input.snapshot.key)!;
      const id = input.slot.trajectoryId;
      const spec = parsePolicySpec(input.slot.policy);
      let forkMs = 0;
      let bootMs = 0;
      let bootOk = false;
      // the policy first: a policy this task cannot use fails before anything is made to clean up
      const upstream = await upstreamFor(input.slot.policy, t, trialOf(config.policies, input.slot.index));
      input.onPhase?.("forking");
      const f = await fork(snapshot, id, t.limits.diskMb);
      forkMs = Math.round(f.forkMs);
      let worker: Worker | undefined;
      try {
        await gateway.unregister(id); // a previous attempt of this trajectory
        const sampling = samplingOf(input.slot.policy);
        const route = gateway.register(id, {
          upstream,
          ...(sampling ? { sampling: trajectorySampling(sampling, input.slot.index) } : {}),
          limits: {
            maxRequests: config.limits.maxTurns,
            ...(config.limits.modelSilenceMs !== undefined
              ? { silenceTimeoutMs: config.limits.modelSilenceMs }
              : {}),
          },
          turnLogPath: join(input.dir, "turns.jsonl"),
        });
        input.onPhase?.("booting");
        const t0 = performance.now();
        worker = await backend.start(
          agentSpec(t, input.task, id, f, route.baseUrlsFor("http://gateway").openai),
          input.signal,
        );
        bootMs = Math.round(performance.now() - t0);
        bootOk = true;
        if (!worker.agentAddress || !worker.policyBaseUrl) {
          throw new FlakegymError("E_WORKER", `worker ${worker.id} started without an agent address`);
        }
        input.onPhase?.(
          "agent",
          worker.pooled === undefined ? undefined : worker.pooled ? "pooled worker" : "cold boot",
        );
        const client = createClineClient({ address: worker.agentAddress });
        const exitWatch = new AbortController();
        let workerExit: WorkerExit | undefined;
        void worker.exited?.then((e) => {
          workerExit = e;
          exitWatch.abort(
            new FlakegymError(
              "E_WORKER_EXIT",
              `worker ended: ${e.reason}${e.detail ? ` (${e.detail})` : ""}`,
            ),
          );
        });
        let turns = 0;
        using linked = createDeadline({ signals: [input.signal, route.signal, exitWatch.signal] });
        const run = await runClineTask({
          client,
          prompt: input.task.prompt,
          provider: {
            kind: "openai",
            baseUrl: worker.policyBaseUrl,
            apiKey: route.token,
            modelId: spec.kind === "openai" || spec.kind === "anthropic" ? spec.model : SCRIPTED_MODEL_ID,
          },
          limits: {
            wallClockMs: config.limits.timeoutMs,
            maxModelRequests: config.limits.maxTurns,
            ...(config.limits.idleMs !== undefined ? { idleMs: config.limits.idleMs } : {}),
          },
          signal: linked.signal,
          onEvent: (e) => {
            if (e.type === "turn_started") input.onTurn?.(++turns);
          },
        });
        client.close();
        input.signal.throwIfAborted();
        // the gateway's thread died: an infra fault (retried), not a verdict on the trajectory
        if (route.signal.aborted && route.signal.reason instanceof Error) throw route.signal.reason;
        const terminal = route.signal.aborted ? (route.signal.reason as GatewayTerminal) : undefined;
        // a limit kill reaches the core first (a dead stream): give the worker a moment to say why
        workerExit ??= await exitWithin(worker, workerExitGraceMs(run.outcome));
        const turnLog = await readTurnLog(join(input.dir, "turns.jsonl")).catch(() => [] as TurnRecord[]);
        let outcome: Outcome = classifyOutcome({
          driver: run.outcome,
          ...(workerExit ? { workerExit } : {}),
          gateway: gatewayVerdictOf(terminal, turnLog),
        });
        input.onPhase?.("collecting");
        if (!worker.collectArtifacts) {
          throw new FlakegymError(
            "E_WORKER",
            `worker ${worker.id} (${worker.backend}) cannot hand back its artifacts (no collectArtifacts)`,
          );
        }
        try {
          await worker.collectArtifacts({
            taskId: run.taskId,
            dest: join(input.dir, "cline"),
            baseCommit: snapshot.manifest.commit,
            baseObjects: join(snapshot.workspace, ".git", "objects"),
            extra: { "outcome.json": outcome, "timings.json": run.timings, "counts.json": run.counts },
            signal: input.signal,
          });
          // the copied files cross the secrets boundary too (the Cline session saw the agent's side)
          await redactTree(join(input.dir, "cline"));
        } catch (err) {
          // a trajectory a limit ended is data even when the dead worker's files cannot be read
          if (outcome.kind === "infra_error" || input.signal.aborted) throw err;
          outcome = {
            ...outcome,
            detail: `${outcome.detail}; artifacts not collected: ${(err as Error).message}`,
          };
        }
        const diff = await readFile(join(input.dir, "cline", "diff.patch"), "utf8").catch(() => "");
        const status = gateway.status(id);
        return {
          outcome,
          ...(run.taskId ? { clineTaskId: run.taskId } : {}),
          bootOk,
          ...(worker.pooled !== undefined ? { pooledWorker: worker.pooled } : {}),
          forkMs,
          bootMs,
          agentMs: Math.round(run.timings.totalMs),
          counts: {
            turns: status?.ok ?? run.counts.modelRequests,
            tokensIn: status?.promptTokens ?? 0,
            tokensOut: status?.completionTokens ?? 0,
          },
          diff,
        };
      } finally {
        await worker?.stop().catch(() => {});
        await gateway.unregister(id).catch(() => undefined);
        await o.keepWorkspace?.(input.slot, f.workspace).catch((err) => o.onNote?.(`keep workspace: ${err}`));
        await releaseFork(f, o.onNote);
      }
    },

    async score(input) {
      const t = taskOf(input.task);
      const snapshot = snapshots.get(input.snapshot.key)!;
      const f = await fork(snapshot, `${input.slot.trajectoryId}-score`, t.limits.diskMb);
      let worker: Worker | undefined;
      let readOnly: ReadOnlyFiles | undefined;
      try {
        // hidden test files owned by another user, bound read-only where the backend can
        const prepared = await prepareReadOnlyHidden(
          backend.kind,
          input.task.hidden,
          snapshot.workspace,
          input.signal,
          scratch,
        );
        readOnly = prepared?.readOnly;
        worker = await backend.start(
          {
            runId: o.runId,
            taskId: input.task.id,
            trajectoryId: `${input.slot.trajectoryId}-score`,
            profile: t.profile,
            workspace: f.workspace,
            depsDir: f.deps,
            gateway: {},
            limits: workerLimits(t, scoringWorkerWallClockMs(config.limits.testTimeoutMs, config.testRepeat)),
            agent: false,
            ...imageSpec(input.task.id),
            ...(prepared ? { readOnlyFiles: prepared.readOnly.files } : {}),
          },
          input.signal,
        );
        return await scoreDiff(
          worker,
          input.diff,
          input.task.hidden,
          {
            partialCredit: config.partialCredit,
            weights: config.weights,
            ...(config.buildCmd !== undefined ? { buildCmd: config.buildCmd } : {}),
            ...(config.lintCmd !== undefined ? { lintCmd: config.lintCmd } : {}),
            repeat: config.testRepeat,
            tamperPenalty: config.tamperPenalty ?? "revert",
            ...(prepared ? { bound: prepared.bound } : {}),
            termTimeoutMs: config.limits.testTimeoutMs,
            taskPrompt: input.task.prompt,
            ...(config.judge
              ? {
                  judge: {
                    ...config.judge,
                    timeoutMs: 120_000,
                    ...(o.judgeApiKey ? { apiKey: o.judgeApiKey } : {}),
                  },
                }
              : {}),
          },
          input.signal,
        );
      } finally {
        await worker?.stop().catch(() => {});
        await readOnly?.release().catch(() => {});
        await releaseFork(f, o.onNote);
      }
    },

    async exportTrajectory({ dir, result }) {
      const turns = await readTurnLog(join(dir, "turns.jsonl")).catch(() => [] as TurnRecord[]);
      const answered = turns.filter((x) => x.status === "ok" && x.response);
      const last = answered.at(-1);
      const messages = last ? chatOf(last) : [{ role: "user", content: result.prompt }];
      if (!config.tokenizer) return { messages };
      tokenizer ??= loadChatTokenizer(config.tokenizer, { signal: o.signal });
      const tok = await tokenizer;
      const reward = result.reward ?? 0;
      const ex = exportTokens(turns, tok, { reward });
      const bySeq = new Map(turns.map((x) => [x.seq, x]));
      const all = ex.segments.map((s) => ({ s, last: bySeq.get(s.seqs.at(-1)!) }));
      const split = (i: number) => {
        const r = ex.segments[i]?.split;
        return r ? `${r.kind} at call ${r.atSeq}: ${r.detail}` : undefined;
      };
      const chosen = config.segments === "all" ? all : all.slice(-1);
      const sequences: TokenSequence[] = chosen.map(({ s, last }) => ({
        tokens: s.tokens,
        masks: s.masks,
        inferenceLogprobs: s.inference_logprobs,
        // "last": the trajectory's one sequence carries its whole reward; "all": the export's share
        reward: config.segments === "all" ? (s.reward ?? reward) : reward,
        ...(last && all.length > 1 ? { messages: chatOf(last) } : {}),
        ...(all.length > 1
          ? {
              segment: {
                index: s.index,
                of: all.length,
                ...(split(s.index) ? { split: split(s.index)! } : {}),
              },
            }
          : {}),
      }));
      return { messages, sequences };
    },

    async provenance() {
      const pkg = resolveClinePackage();
      const described = await backend.describe().catch(() => ({}) as Record<string, string>);
      return {
        cline: { version: pkg.version, integrity: pkg.integrity },
        ...(described.imageDigest ? { imageDigest: described.imageDigest } : {}),
      };
    },

    async close() {
      await pool?.close().catch(() => {});
      await chosen.close?.().catch(() => {});
      await gateway.close();
      await rm(scratch, { recursive: true, force: true });
    },
  };
  return deps;
}
