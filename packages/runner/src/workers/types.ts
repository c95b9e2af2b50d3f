import type { OutcomeKind } from "@flakegym/cline-vendor";
import type { ProfileId } from "@flakegym/profiles";

/**
 * The worker contract every backend (local bubblewrap, podman, nomad) implements. Backends differ
 * only in how a worker starts; all are driven by the same cline-vendor client over gRPC.
 */

/** Per-worker resource limits; a backend enforces what its platform allows and reports the rest. */
export interface ResourceLimits {
  readonly memoryMb: number;
  readonly pids: number;
  readonly cpuSeconds?: number;
  readonly diskMb?: number;
  readonly wallClockMs: number;
}

/** What a backend needs to start one worker for one trajectory (or one scoring run). */
export interface WorkerSpec {
  readonly runId: string;
  readonly taskId: string;
  readonly trajectoryId: string;
  readonly profile: ProfileId;
  /** Host path of this worker's writable copy-on-write workspace (local, podman). */
  readonly workspace: string;
  /**
   * Host path of the package caches built with the snapshot (`<fork>/deps`: CARGO_HOME, npm and
   * pip caches), mounted writable at /deps (local, podman). Optional.
   */
  readonly depsDir?: string;
  /**
   * Host directories bound read-only at their own path (local, podman): the prefix of the
   * interpreter a snapshot's venv links to (a pyenv, uv or Nix CPython; see snapshots/python-shape.ts).
   */
  readonly hostBinds?: readonly string[];
  /** Image reference for container/cluster backends (a digest when built by the flake). */
  readonly image?: string;
  /**
   * How the worker reaches the policy gateway. Local sandboxes get the gateway's unix socket bound
   * in; remote backends get a routable http URL. The worker turns this into the base URL it gives
   * the Cline core.
   */
  readonly gateway: { readonly socketPath?: string; readonly url?: string };
  readonly limits: ResourceLimits;
  /** Extra environment for the agent's processes (never the runner's secrets). */
  readonly env?: Readonly<Record<string, string>>;
  /** Start the Cline core in this worker (false: a scoring worker that only runs commands). */
  readonly agent: boolean;
  /**
   * Host files (owned by another user than the sandbox's, mode 0444) bound read-only at
   * workspace-relative `path` (local bubblewrap, podman): the hidden tests of a scoring worker,
   * which code under test can then neither chmod, write, unlink nor rename. Honoured where the
   * backend declares {@link BackendCapabilities.bindsHiddenReadOnly}; others ignore it.
   */
  readonly readOnlyFiles?: readonly { readonly hostPath: string; readonly path: string }[];
  /**
   * A second sandbox path the workspace is bound at, writable (a Harbor task's WORKDIR such as
   * /app), with the read-only files bound there too; the workspace stays at /workspace.
   */
  readonly workspaceAlias?: string;
  /** Host directories shown read-only at container paths (a task's `mounts`, e.g. Harbor's /skills). */
  readonly containerMounts?: readonly { readonly hostPath: string; readonly path: string }[];
  /**
   * A built root filesystem (a Harbor task's environment from its Dockerfile, tasks/dockerfile-build.ts)
   * shown as the sandbox's system instead of this machine's /usr (local bubblewrap).
   */
  readonly systemRoot?: string;
  /**
   * The user the agent's commands run as in a Harbor task's container (task.toml `agent.user`,
   * tasks/harbor-agent-user.ts); the Cline core stays the container's root. Absent: root.
   */
  readonly agentUser?: { readonly uid: number; readonly gid: number };
}

export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly durationMs: number;
  /** The limit that stopped the command, when one did (see workers/limit-verdict.ts). */
  readonly limit?: WorkerLimit;
  /**
   * The sandbox process itself was killed by a signal we did not send (not a timeout, not an
   * abort): the machinery failed. Code inside a sandbox can kill what runs in it, never the sandbox.
   */
  readonly sandboxKilled?: boolean;
  /**
   * The sandbox process itself was stopped (SIGSTOP: state T) when the command's deadline came: it
   * was frozen from outside — code inside the sandbox cannot see that process, let alone stop it.
   */
  readonly sandboxStopped?: boolean;
}

export interface ExecOptions {
  readonly cwd?: string;
  readonly timeoutMs?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  /**
   * The command holds something no other process in the sandbox may reach (the scoring channel):
   * the local backend makes it the sandbox's PID 1, so no init of its own holds its stdout.
   */
  readonly asInit?: boolean;
}

/** What `collectArtifacts` gathers from an agent worker once its Cline task is over. */
export interface CollectArtifactsInput {
  /** The Cline task id the driver reported ("" when the task never started: no task files). */
  readonly taskId: string;
  /** Local directory written atomically (temp + rename): Cline's task files, `diff.patch`, `manifest.json`. */
  readonly dest: string;
  /** The snapshot commit the diff is taken against (local; remote workers use the HEAD at boot). */
  readonly baseCommit?: string;
  /**
   * Host path of an objects dir holding `baseCommit` that the agent cannot write: the pristine
   * snapshot's `.git/objects` (local, podman: required; Nomad workers seal their base at start).
   */
  readonly baseObjects?: string;
  /** More files for `dest` (`name → content`; strings/Buffers as-is, other values as JSON). */
  readonly extra?: Readonly<Record<string, unknown>>;
  readonly signal: AbortSignal;
  /** Bound on the whole collection (default 60 s). */
  readonly timeoutMs?: number;
}

/**
 * The limits a worker enforces itself. Each name is also the `limit` of the trajectory's outcome
 * (cline-vendor `LimitName`): `pids` = the process-count limit, `disk` = the workspace quota.
 */
export const WORKER_LIMITS = ["wall_clock", "cpu_time", "memory", "pids", "disk"] as const;
export type WorkerLimit = (typeof WORKER_LIMITS)[number];

/**
 * Why a worker ended, as every backend reports it: `stopped` by the runner, one of
 * {@link WORKER_LIMITS} hit (the trajectory ends as `limits_exceeded`/`timeout` naming it, never
 * retried), or `crashed` for anything else (the machinery failed: `infra_error`, retried).
 * `detail` says what was seen (usage vs. limit, the platform's event), for the trajectory's reason.
 */
export interface WorkerExit {
  /** `frozen`: stopped from outside the sandbox (workers/frozen-verdict.ts): `infra_error`, retried. */
  readonly reason: "stopped" | "crashed" | "frozen" | WorkerLimit;
  readonly detail?: string;
  /**
   * `frozen` only: what was stopped is within the agent's commands' reach (one user), so the stop
   * may be theirs — the policy's end once they ran (rollout/classify-outcome.ts), never retried.
   */
  readonly withinReach?: boolean;
}

/**
 * Who the agent's commands can reach in an agent worker (issue 42): `apart`, they run as another
 * user than the Cline core, its host and the supervisor, so they can neither signal, stop, ptrace
 * nor read them; `one`, the same user, so a core that died or froze may be their doing.
 */
export type AgentUsers = "apart" | "one";

export interface Worker {
  readonly id: string;
  readonly backend: string;
  /** Who the agent's commands can reach (agent workers; undefined: the backend does not say). */
  readonly agentUsers?: AgentUsers;
  /** host:port where the runner reaches this worker's cline-core gRPC (agent workers only). */
  readonly agentAddress?: string;
  /** A token every call to the core at `agentAddress` must carry (Nomad workers' core gate). */
  readonly agentToken?: string;
  /** The base URL the Cline core inside the worker must use for the policy. */
  readonly policyBaseUrl?: string;
  /** Host path of the core's config dir (artifacts live under data/tasks/<taskId>/) when local. */
  readonly configDir?: string;
  /**
   * True when every `exec` runs in a fresh sandbox that sees nothing an earlier `exec` did (Nomad:
   * one allocation per call). Callers that need several steps compose them into one command.
   */
  readonly statelessExec?: boolean;
  /** True when the worker was pre-booted by the warm pool and adopted this trajectory (workers/pool). */
  readonly pooled?: boolean;
  /** Runs a shell command inside the worker's sandbox, in the workspace by default. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * Agent workers: hands back the finished task's Cline files and the workspace's diff (against
   * the snapshot), wherever the worker runs — local: read from the host paths; Nomad: the
   * supervisor writes the diff in the allocation on request and the runner reads the files
   * through the allocation filesystem API. Call it before `stop()`.
   */
  collectArtifacts?(input: CollectArtifactsInput): Promise<void>;
  /**
   * CPU seconds every process of the worker has used since it started (its cgroup's counter: the
   * core's boot included, a pooled worker's idle time too); undefined when the backend cannot tell
   * (no cgroup here, or a backend that does not measure). Read it before `stop()`.
   */
  cpuSeconds?(): Promise<number | undefined>;
  /** Stops everything the worker started; idempotent. */
  stop(): Promise<void>;
  /**
   * Hands the worker back after its trajectory (instead of `stop`), saying how the trajectory
   * ended: a pool that reuses workers (`--reuse`) resets it for the next trajectory when the
   * outcome is clean and the reset is proven, else it is stopped. Pooled workers only.
   */
  release?(outcome: OutcomeKind | undefined): Promise<void>;
  /** Resolves when the worker has ended, stopped by the runner or by a limit (local, podman). */
  readonly exited?: Promise<WorkerExit>;
}

/**
 * What a backend can do, declared by each backend itself, so callers decide on the capability
 * rather than on the backend's name.
 */
export interface BackendCapabilities {
  /** `WorkerSpec.readOnlyFiles` is honoured: hidden test files are bound read-only into the sandbox. */
  readonly bindsHiddenReadOnly: boolean;
  /**
   * Workers start from the snapshot work tree on this host, so the host can always compute the
   * hidden test files from it (false: the host may hold no work tree; the scoring script installs them).
   */
  readonly hostHasSnapshotTree: boolean;
  /** Workers run on other machines: the policy gateway needs a routable `--gateway-advertise` address. */
  readonly needsRoutableGateway: boolean;
  /**
   * Workers run the task's image from this host's podman store, so a snapshot can be that image's
   * work tree (snapshots/from-image.ts).
   */
  readonly runsHostImages: boolean;
  /** Agent workers run the one-byte Cline core where it is built (rollout's run.json provenance). */
  readonly usesOneByteCore: boolean;
  /**
   * Each worker starts from a fresh fork of the snapshot made on this host (`WorkerSpec.workspace`).
   * False: the worker brings its own workspace (an image's, a Nomad client's snapshotDir), so the
   * rollout makes no fork and the spec names the snapshot's own, read-only tree.
   */
  readonly hostForks: boolean;
}

export type BackendKind = "local" | "podman" | "nomad";

export interface WorkerBackend {
  readonly kind: BackendKind;
  readonly capabilities: BackendCapabilities;
  start(spec: WorkerSpec, signal?: AbortSignal): Promise<Worker>;
  /** Facts for `doctor` (e.g. bubblewrap version, podman runtime, Nomad address). */
  describe(): Promise<Record<string, string>>;
}
