import type { AgentUsers, WorkerSpec } from "../types.js";
import type { PreparedShape } from "./shape.js";

/**
 * Starts the Cline core (host + core under the supervisor) inside a prepared sandbox shape. Kept
 * as a hook so the exec-only worker has no dependency on the agent, and so tests can see the shape.
 */
export interface AgentLauncher {
  launch(ctx: AgentLaunchContext): Promise<RunningAgent>;
}

export interface AgentLaunchContext {
  readonly spec: WorkerSpec;
  readonly prepared: PreparedShape;
  /** Host dir for the core's config (artifacts under data/tasks/<id>/), bound at the same path. */
  readonly configDir: string;
  /** Host dir for the unix socket through which the core's gRPC is exposed. */
  readonly socketDir: string;
  /** Base URL of the policy inside the sandbox (the supervisor's forwarder). */
  readonly policyBaseUrl: string;
  readonly signal?: AbortSignal;
}

export interface RunningAgent {
  /** Where the runner reaches the core's gRPC (`unix:<path>` or `host:port`). */
  readonly address: string;
  /** The policy base URL the core must be configured with (inside the sandbox). */
  readonly policyBaseUrl: string;
  /** Host pid of the agent's process-group leader. */
  readonly pid: number;
  /** Whether the agent's commands run as another user than the core (agent-apart.ts). */
  readonly users?: AgentUsers;
  /** Resolves when the agent's processes have exited on their own. */
  readonly exited: Promise<{ code: number | null; detail?: string }>;
  /** ms since the supervisor's last heartbeat (workers/frozen-verdict.ts); undefined before the first. */
  heartbeatAgeMs(): number | undefined;
  stop(): Promise<void>;
}
