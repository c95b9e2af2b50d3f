import { chmod, chown } from "node:fs/promises";
import { execa } from "execa";
import { SCORER_HOST_UID } from "./bwrap-args.js";
import { SANDBOX_GID, SANDBOX_UID } from "./shape.js";

/**
 * The agent's sandbox as two users (issue 42): the supervisor, cline-host and the Cline core run as
 * the sandbox's root (outside, {@link SCORER_HOST_UID}: no file of the host's, no other sandbox's
 * user), with only the capabilities bwrap-args.ts `SCORER_CAPS` names; every process the core
 * starts — the agent's commands — runs as the sandbox user (outside, the runner's own uid, the
 * owner of the workspace), without any (cline-vendor agent-user.cjs). Those commands then cannot
 * signal, stop, ptrace or read the processes that watch them, nor enter the core's config (the
 * gateway token, the task's history) or socket dirs. Only a runner that is root may map two users.
 */

/**
 * Whether the agent's sandbox runs apart: given `runner` (a runner that may map two users, exec.ts
 * `apartRunner`), unless `FLAKEGYM_AGENT_USERS=one` asks for one user. Pure.
 */
export function agentApartOf(
  runner: { readonly uid: number; readonly gid: number } | undefined,
  env: Readonly<Record<string, string | undefined>>,
): { readonly runnerUid: number; readonly runnerGid: number } | undefined {
  if (!runner || env.FLAKEGYM_AGENT_USERS === "one") return undefined;
  return { runnerUid: runner.uid, runnerGid: runner.gid };
}

/** The agent's user inside the sandbox (the workspace's owner there). */
export const AGENT_IDS = { uid: SANDBOX_UID, gid: SANDBOX_GID } as const;

/**
 * The core's own dirs (config: the gateway token and the task's files; sock: the core's gRPC
 * socket) made the sandbox root's and closed to everyone else, so the agent's user cannot enter
 * them. The runner, root on the host, still reads them.
 */
export async function closeCoreDirs(dirs: readonly string[]): Promise<void> {
  for (const d of dirs) {
    await chown(d, SCORER_HOST_UID, SCORER_HOST_UID);
    await chmod(d, 0o700);
  }
}

/**
 * Dirs (the workspace, the agent's HOME) made a Harbor container's agent.user's, as the image's
 * `COPY --chown` makes the workspace Harbor's agent's: users 0..65535 are themselves there, so the
 * host ids are the container's.
 */
export async function ownedByAgentUser(
  dirs: readonly string[],
  user: { readonly uid: number; readonly gid: number },
): Promise<void> {
  for (const d of dirs)
    await execa("chown", ["-R", `${user.uid}:${user.gid}`, d], { timeout: 120_000, stdin: "ignore" });
}
