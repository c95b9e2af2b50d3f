import { lstat } from "node:fs/promises";
import { join } from "node:path";
import type { EXEC_ONLY_INIT } from "../exec-only-init.js";
import type { WorkerExit } from "../types.js";

/** What podman and the container's cgroup say about a container that ended on its own. */
export interface ContainerExitFacts {
  /** `podman inspect` `.State.OOMKilled` (not always set by runc on a hybrid cgroup host). */
  readonly oomKilled: boolean;
  /** `.State.ExitCode`, when podman reports one. */
  readonly exitCode: number | undefined;
  /** OOM kills counted by the container's cgroup since the worker started (undefined: unreadable). */
  readonly oomKills: number | undefined;
  /**
   * conmon wrote its `oom` marker (a regular file in its working dir, the worker's host dir, which
   * no container path reaches). conmon watches the cgroup's OOM events itself, so the marker stays
   * when runc has already removed the cgroup or the count read 0 — seen on this hybrid cgroup host.
   */
  readonly conmonOomMarker: boolean;
  /** The worker's memory limit, for the detail. */
  readonly memoryMb: number;
}

/**
 * Why a container ended on its own, from its own exit facts: a memory kill when podman says so, the
 * cgroup counted an OOM kill or conmon left its OOM marker, else a crash (the exit code named). A memory kill is the task's
 * limit, never an infra failure to retry. Pure.
 */
export function containerExitOf(f: ContainerExitFacts): WorkerExit {
  if (f.oomKilled || (f.oomKills ?? 0) > 0 || f.conmonOomMarker)
    return {
      reason: "memory",
      detail: `memory limit ${f.memoryMb} MiB reached (the container was OOM-killed)`,
    };
  const code = f.exitCode === undefined ? "" : ` with status ${f.exitCode}`;
  return { reason: "crashed", detail: `the container exited${code}` };
}

/** Parses `podman inspect --format '{{.State.OOMKilled}} {{.State.ExitCode}}'`. Pure. */
export function parseExitState(stdout: string): Pick<ContainerExitFacts, "oomKilled" | "exitCode"> {
  const [oom, code] = stdout.trim().split(/\s+/);
  const n = Number(code);
  return { oomKilled: oom === "true", exitCode: code !== undefined && Number.isInteger(n) ? n : undefined };
}

/**
 * Whether conmon left its `oom` marker in `dir` (its working dir: the worker's host dir). Only a
 * regular file counts; the dir is never bound into the container, so only conmon writes there.
 */
export async function conmonOomMarkerIn(dir: string): Promise<boolean> {
  const st = await lstat(join(dir, "oom")).catch(() => undefined);
  return st?.isFile() ?? false;
}

/**
 * Whether an exec-only container that ended was killed from outside: its PID 1
 * ({@link EXEC_ONLY_INIT}) ignores every signal the code under test can send it, so only a SIGKILL
 * from outside the PID namespace ends it — status 137 — or `podman rm -f` from outside removed it
 * (no exit status left to read). A memory kill is the task's limit, not the machinery's failure;
 * any other status (the init's shell failing to fork its `sleep`, say) is the container's own end.
 * Pure.
 */
export function killedFromOutside(f: ContainerExitFacts): boolean {
  if (containerExitOf(f).reason === "memory") return false;
  return f.exitCode === undefined || f.exitCode === SIGKILL_STATUS;
}

/** A container's status when its PID 1 died of SIGKILL (128 + 9). */
const SIGKILL_STATUS = 137;
