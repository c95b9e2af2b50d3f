import { FlakegymError } from "../../errors.js";
import { LOCAL_CAPABILITIES } from "../local/local-backend.js";
import type { ExecResult, Worker, WorkerExit, WorkerSpec } from "../types.js";
import type { ResetReport } from "./reuse.js";
import type { IdleWorker, PoolableBackend } from "./types.js";

export interface DummyPoolableOptions {
  /** How long a boot takes, ms (default 20). */
  readonly bootMs?: number;
  /** What `poolUnavailable` answers (default: available). */
  readonly unavailable?: string;
  /** Idle workers can be reset in place after a trajectory (`--reuse`). Default true. */
  readonly resettable?: boolean;
}

/** What the dummy saw, for tests to assert on. */
export interface DummyPoolable extends PoolableBackend {
  /** Every worker ever booted (idle or cold), in order. */
  readonly booted: {
    readonly id: string;
    spec?: WorkerSpec;
    stopped: boolean;
    specs: WorkerSpec[];
    resets: number;
  }[];
  /** Ends an idle worker as if its core had died. */
  crashIdle(id: string): void;
  /** Makes the next `n` boots fail. */
  failBoots(n: number): void;
  /** Makes the next `n` resets report a process that survived them. */
  dirtyResets(n: number): void;
}

/**
 * An in-process poolable backend for tests of the pool orchestrator: boots take `bootMs`, a worker
 * adopts one spec once, `exec` answers with the adopted workspace. Nothing is sandboxed.
 */
export function createDummyPoolable(o: DummyPoolableOptions = {}): DummyPoolable {
  const booted: DummyPoolable["booted"] = [];
  const idle = new Map<string, (e: WorkerExit) => void>();
  let failing = 0;
  let dirty = 0;
  let n = 0;

  const make = async (signal?: AbortSignal): Promise<IdleWorker> => {
    signal?.throwIfAborted();
    await new Promise((r) => setTimeout(r, o.bootMs ?? 20));
    if (failing > 0) {
      failing--;
      throw new FlakegymError("E_DUMMY_BOOT", "dummy boot failed");
    }
    const rec: DummyPoolable["booted"][number] = { id: `dummy-${++n}`, stopped: false, specs: [], resets: 0 };
    booted.push(rec);
    let resolveExit!: (e: WorkerExit) => void;
    const exited = new Promise<WorkerExit>((r) => {
      resolveExit = r;
    });
    let ended = false;
    const end = (e: WorkerExit) => {
      if (ended) return;
      ended = true;
      rec.stopped = true;
      idle.delete(rec.id);
      resolveExit(e);
    };
    idle.set(rec.id, end);
    let adopted = false;
    const reset = async (): Promise<ResetReport> => {
      if (ended) throw new FlakegymError("E_WORKER_STOPPED", `dummy worker ${rec.id} has ended`);
      rec.resets++;
      adopted = false;
      idle.set(rec.id, end);
      const stray = dirty > 0 ? [4242] : [];
      if (dirty > 0) dirty--;
      return resetReport(stray);
    };
    return {
      id: rec.id,
      exited,
      ...(o.resettable === false ? {} : { reset }),
      async adopt(spec) {
        if (ended) throw new FlakegymError("E_WORKER_STOPPED", `dummy worker ${rec.id} has ended`);
        if (adopted)
          throw new FlakegymError("E_POOL_ADOPT", `dummy worker ${rec.id} already served a trajectory`);
        adopted = true;
        idle.delete(rec.id);
        rec.spec = spec;
        rec.specs.push(spec);
        return adoptedWorker(rec.id, spec.workspace, exited, end);
      },
      stop: async () => end({ reason: "stopped" }),
    };
  };

  return {
    kind: "local",
    capabilities: LOCAL_CAPABILITIES,
    booted,
    crashIdle(id) {
      idle.get(id)?.({ reason: "crashed", detail: "dummy crash" });
    },
    failBoots(k) {
      failing = k;
    },
    dirtyResets(k) {
      dirty = k;
    },
    async describe() {
      return { sandbox: "dummy" };
    },
    async poolUnavailable() {
      return o.unavailable;
    },
    boot: (_template, signal) => make(signal),
    async start(spec, signal) {
      const w = await make(signal);
      const worker = await w.adopt(spec, signal);
      return { ...worker, pooled: false };
    },
  };
}

/** A dummy reset's report: clean but for the given stray processes. */
function resetReport(strayPids: number[]): ResetReport {
  return {
    strayPids,
    keptGone: [],
    dirtyPaths: [],
    slotMounts: 0,
    stateDiff: [],
    memoryMb: 100,
    firstMemoryMb: 100,
  };
}

/** The worker a dummy hands out on adoption: `exec` answers with the adopted workspace. */
function adoptedWorker(
  id: string,
  workspace: string,
  exited: Promise<WorkerExit>,
  end: (e: WorkerExit) => void,
): Worker {
  return {
    id,
    backend: "local",
    pooled: true,
    exited,
    async exec(): Promise<ExecResult> {
      return { exitCode: 0, stdout: workspace, stderr: "", timedOut: false, durationMs: 0 };
    },
    stop: async () => end({ reason: "stopped" }),
  };
}
