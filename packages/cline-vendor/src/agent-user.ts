import { fileURLToPath } from "node:url";

/**
 * The agent's commands as another user than the Cline core (issue 42): `supervisor/agent-user.cjs`,
 * preloaded into the core, starts every child process of the core as the agent's user
 * (`FLAKEGYM_AGENT_USER`, `<uid>:<gid>`), so nothing those commands run can signal, stop, ptrace or
 * read the core, its host or the supervisor. The core needs CAP_SETUID/CAP_SETGID for it: a sandbox
 * of two users (runner workers/local `apartPrefix`).
 */

/** The preload that installs it (`agent-user-install.cjs`). */
export const AGENT_USER_PRELOAD_PATH = fileURLToPath(
  new URL("../supervisor/agent-user-install.cjs", import.meta.url),
);
/** The core's Node flags that load it (the supervisor's `--core-node-arg`s). */
export const AGENT_USER_NODE_ARGS: readonly string[] = ["--require", AGENT_USER_PRELOAD_PATH];
/** The environment variable the preload reads (and removes) the agent's ids from. */
export const AGENT_USER_ENV = "FLAKEGYM_AGENT_USER";

/** The variable's value for the agent's `uid` and `gid`. Pure. */
export function agentUserValue(uid: number, gid: number): string {
  return `${uid}:${gid}`;
}
