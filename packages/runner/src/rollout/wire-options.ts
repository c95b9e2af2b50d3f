import type { RecordedImage, StoreWorkerProvenance } from "../run-format/schema.js";
import type { ImageTreeReader } from "../snapshots/from-image.js";
import type { PythonOptions } from "../snapshots/python-providers.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import type { PoolState } from "../workers/pool/types.js";
import type { WorkerBackend } from "../workers/types.js";
import type { TrajectorySlot } from "./plan.js";

/** What `createRolloutDeps` is given besides the run's config (wire.ts). */
export interface WireOptions {
  /** The run's id, recorded in each worker's spec. */
  readonly runId: string;
  readonly signal: AbortSignal;
  readonly env: NodeJS.ProcessEnv;
  readonly judgeApiKey?: string;
  /** Snapshot cache directory (default: the snapshots module's default). */
  readonly snapshotCacheDir?: string;
  /** Interpreters named for python tasks, and whether another version is allowed (else from env: FLAKEGYM_PYTHON…). */
  readonly python?: PythonOptions;
  /** How a snapshot image's /workspace is read (default: podman); tests pass dummyImageTreeReader. */
  readonly imageTreeReader?: ImageTreeReader;
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
   * `nix run .#rollout` on the local backend: the store paths each task's workers run on (its
   * profile's toolchain, its snapshot when the flake built it), realised before the run.
   */
  readonly storeWorkers?: ReadonlyMap<string, StoreWorkerProvenance>;
  /**
   * `--pool`/`--pool-idle`: keep up to `size` pre-booted agent workers per task shape (local
   * backend), so the Cline core does not boot on a trajectory's critical path (workers/pool).
   */
  readonly pool?: { readonly size: number; readonly idleMs: number; readonly reuse?: number };
  /** The warm pool's state as it changes (progress). */
  readonly onPool?: (state: PoolState) => void;
  /** The gateway also times each call against its thread's run time (PolicyGatewayOptions.measureRunTime; benchmarks). */
  readonly gatewayMeasureRunTime?: boolean;
}
