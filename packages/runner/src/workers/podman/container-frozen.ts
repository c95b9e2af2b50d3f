import { frozenExitOf, heartbeatLost } from "../frozen-verdict.js";
import { processStopped } from "../local/sandbox.js";
import type { WorkerExit } from "../types.js";
import { type PodmanState, pm } from "./backend-state.js";

/**
 * What froze a container from outside, in words, or undefined (pure): `podman pause` (its cgroup
 * frozen: status `paused`), or its PID 1 stopped (state T) — the kernel drops SIGSTOP sent to a pid
 * namespace's init from inside it, so only the host can stop it.
 */
export function containerFreezeOf(status: string, pid1Stopped: boolean): string | undefined {
  if (status.trim() === "paused") return "its container is paused (podman pause)";
  if (pid1Stopped) return "its PID 1, which nothing inside the container can stop, is stopped (state T)";
  return undefined;
}

/** The container's freeze now (bounded `podman inspect`), or undefined. */
export async function containerFreeze(st: PodmanState, name: string): Promise<string | undefined> {
  const r = await pm(st, ["inspect", "--format", "{{.State.Status}} {{.State.Pid}}", name], {
    timeoutMs: 15_000,
  });
  if (r.exitCode !== 0) return undefined;
  const [status = "", pid = "0"] = r.stdout.trim().split(/\s+/);
  return containerFreezeOf(status, Number(pid) > 0 && processStopped(Number(pid)));
}

/** An agent container's end when it is frozen from outside (no heartbeat and a freeze), else undefined. */
export async function frozenContainerExit(
  st: PodmanState,
  name: string,
  heartbeatAgeMs: number | undefined,
): Promise<WorkerExit | undefined> {
  // a supervisor that beats is alive: no podman call then
  if (!heartbeatLost(heartbeatAgeMs)) return undefined;
  return frozenExitOf({ heartbeatAgeMs, outsideFreeze: await containerFreeze(st, name) });
}
