import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import {
  type ClinePackage,
  ONE_BYTE_PINS,
  probeOneByteCore,
  resolveClinePackage,
} from "@flakegym/cline-vendor";
import { flakegymCacheRoot } from "../cache-root.mjs";
import { FlakegymError } from "../errors.js";
import { type ChatTokenizer, loadChatTokenizer } from "../export/tokenizer.js";
import { startGatewayThread } from "../gateway/thread.js";
import { readTurnLog, type TurnRecord } from "../gateway/turn-log.js";
import type { PolicyGateway } from "../gateway/types.js";
import { writeOwnerRecord } from "../gc/owner.js";
import { parsePolicySpec } from "../policy/spec.js";
import { runSecrets } from "../redact/redactor.js";
import type { RunConfig } from "../run-format/schema.js";
import { hiddenTestsOf } from "../scoring/hidden-tests.js";
import {
  buildSnapshot,
  type Snapshot,
  snapshotSpecOfProfile,
  snapshotSpecOfTask,
} from "../snapshots/build.js";
import { chooseImageSnapshot, podmanImageTreeReader, snapshotFromImage } from "../snapshots/from-image.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../tasks/catalog.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import { parseGatewayAdvertise } from "../workers/nomad/gateway.js";
import { runAgentAttempt } from "./agent-attempt.js";
import { resolveRowSource } from "./dataset-source.js";
import type { RolloutDeps, RolloutTask, SnapshotRef } from "./deps.js";
import { trialOf } from "./plan.js";
import { runScoringAttempt } from "./scoring-attempt.js";
import { trajectoryExportOf } from "./trajectory-export.js";
import { advertiseListenOf, checkGatewayAdvertise, chooseBackend, poolFor } from "./wire-backend.js";
import { depsOfSnapshot, forkIn } from "./wire-forks.js";
import type { WireOptions } from "./wire-options.js";
import { imageOf, noReference, rowRuntimeOf, rowTaskOf, type TaskRuntime } from "./wire-tasks.js";
import { createUpstreams } from "./wire-upstreams.js";
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

export async function createRolloutDeps(config: RunConfig, o: WireOptions): Promise<RolloutDeps> {
  runSecrets.add(o.judgeApiKey);
  // --gateway-advertise: validated (never loopback); the gateway also listens on it
  const advertised = o.gatewayAdvertise === undefined ? undefined : parseGatewayAdvertise(o.gatewayAdvertise);
  checkGatewayAdvertise(o.backend?.kind ?? config.backend, advertised);
  const scratch = join(o.scratchDir ?? tmpdir(), `flakegym-rollout-${randomBytes(4).toString("hex")}`);
  await mkdir(scratch, { recursive: true });
  await writeOwnerRecord(scratch, "rollout"); // `flakegym gc` removes it if this process dies
  const chosen = chooseBackend(config, o, advertised);
  const pool = poolFor(chosen, o);
  const backend = pool ?? chosen;
  // in a thread of its own: the cores' model calls never wait behind this loop's work (their gRPC
  // streams, sandboxes, scoring); see docs/gateway.md
  const gateway: PolicyGateway = await startGatewayThread({
    listen: [
      { socketPath: join(scratch, "gateway.sock") },
      { host: "127.0.0.1", port: 0 },
      ...(advertised ? [advertiseListenOf(advertised)] : []),
    ],
    signal: o.signal,
  });
  const catalog = config.catalog ?? BUILTIN_CATALOG_DIR;
  const loaded = new Map<string, TaskRuntime>();
  const rows = new Map((o.datasetTasks ?? []).map((t) => [t.id, t]));
  const snapshots = new Map<string, Snapshot>();
  const solutions = new Map<string, string>();
  const upstreamFor = createUpstreams(o);
  let tokenizer: Promise<ChatTokenizer> | undefined;

  const taskOf = (t: RolloutTask) => loaded.get(t.id)!;
  const imageFor = (taskId: string) => imageOf(config.images, o.workerImages, taskId);
  /** What every worker of task `t` shares, on fork `f`. */
  const specBase = (t: TaskRuntime, task: RolloutTask, f: WorkerSpecBase["fork"]): WorkerSpecBase => ({
    runId: o.runId,
    taskId: task.id,
    task: t,
    image: imageFor(task.id),
    fork: f,
  });
  const agentSpec = (
    t: TaskRuntime,
    task: RolloutTask,
    id: string,
    f: WorkerSpecBase["fork"],
    url?: string,
  ) => agentWorkerSpec(specBase(t, task, f), id, config.limits, { socketPath: gateway.socketPath!, url });
  const fork = (snapshot: Snapshot, t: TaskRuntime) => async (name: string) => {
    const f = await forkIn(scratch, snapshot, name, t.limits.diskMb, o.signal);
    return Object.assign(f, { deps: depsOfSnapshot(snapshot, f.tree) });
  };

  async function loadRow(row: TaskProfile): Promise<RolloutTask> {
    const rt = rowRuntimeOf(row);
    if (config.policies.some((p) => parsePolicySpec(p).kind === "gold")) throw noReference(rt);
    loaded.set(row.id, rt);
    return rowTaskOf(row, config.limits.testTimeoutMs, imageFor(row.id));
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
        image: imageFor(id),
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
      const fromImage = chooseImageSnapshot(imageFor(task.id), o.backend?.kind ?? config.backend);
      const cacheDir = o.snapshotCacheDir ? { cacheDir: o.snapshotCacheDir } : {};
      if (fromImage.use) progress(`copying /workspace of snapshot image ${fromImage.ref}`);
      const s = fromImage.use
        ? await snapshotFromImage(spec, fromImage, o.imageTreeReader ?? podmanImageTreeReader(), {
            signal,
            ...cacheDir,
          })
        : await buildSnapshot(spec, {
            signal,
            ...cacheDir,
            onProgress: (ev) => {
              if (ev.kind === "step") progress(`${ev.step} ${ev.status}`);
              else if (ev.kind === "wait") progress("waiting for another build of the same snapshot");
            },
          });
      snapshots.set(s.key, s);
      // the pool boots workers shaped for this task while the first trajectories fork, no more
      // than the task's trajectories still to start (retries beyond them start cold)
      const shape = agentSpec(t, task, "warm", { workspace: s.workspace, deps: depsOfSnapshot(s, s.tree) });
      await pool?.warm(shape, trajectories);
      return { key: s.key, cached: s.cached };
    },

    async runAgent(input) {
      const t = taskOf(input.task);
      const snapshot = snapshots.get(input.snapshot.key)!;
      // the policy first: a policy this task cannot use fails before anything is made to clean up
      const trial = trialOf(config.policies, input.slot.index);
      const upstream = await upstreamFor(input.slot.policy, t, solutions.get(t.id), trial);
      const keep = o.keepWorkspace;
      return await runAgentAttempt(
        {
          config,
          gateway,
          backend,
          snapshot,
          upstream,
          fork: fork(snapshot, t),
          workerSpec: (f, url) => agentSpec(t, input.task, input.slot.trajectoryId, f, url),
          keepWorkspace: keep && ((workspace) => keep(input.slot, workspace)),
          onNote: o.onNote,
        },
        input,
      );
    },

    async score(input) {
      const t = taskOf(input.task);
      const snapshot = snapshots.get(input.snapshot.key)!;
      return await runScoringAttempt(
        {
          config,
          backend,
          snapshot,
          scratch,
          judgeApiKey: o.judgeApiKey,
          fork: fork(snapshot, t),
          workerSpec: (f, readOnlyFiles) =>
            scoringWorkerSpec(specBase(t, input.task, f), input.slot.trajectoryId, config, readOnlyFiles),
          onNote: o.onNote,
        },
        input,
      );
    },

    async exportTrajectory({ dir, result }) {
      const turns = await readTurnLog(join(dir, "turns.jsonl")).catch(() => [] as TurnRecord[]);
      if (!config.tokenizer) return trajectoryExportOf(turns, result, config.segments, undefined);
      tokenizer ??= loadChatTokenizer(config.tokenizer, { signal: o.signal });
      return trajectoryExportOf(turns, result, config.segments, await tokenizer);
    },

    async provenance() {
      const pkg = resolveClinePackage();
      const described = await backend.describe().catch(() => ({}) as Record<string, string>);
      return {
        cline: { version: pkg.version, integrity: pkg.integrity, bundle: bundleProvenance(pkg, config, o) },
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

/** What run.json says of the core's bundle: local workers run the one-byte one where it is built. */
function bundleProvenance(pkg: ClinePackage, config: RunConfig, o: WireOptions): string {
  if ((o.backend?.kind ?? config.backend) !== "local") return "cline-core.js (the package's own)";
  const d = probeOneByteCore(pkg, flakegymCacheRoot(process.env));
  return d.on
    ? `one-byte (sha256 ${ONE_BYTE_PINS.output})`
    : `cline-core.js (the package's own): ${d.reason}`;
}
