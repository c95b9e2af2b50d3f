import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { SUPERVISOR_PATH } from "@flakegym/cline-vendor";
import type { FreezeEvidence } from "../frozen-verdict.js";
import type { RunningAgent } from "./agent.js";
import { SCORER_HOST_UID } from "./bwrap-args.js";
import { type ProcRow, readProcRows, stoppedDescendantOf, stoppedOwnedBy } from "./out-of-reach-stop.js";
import { processStopped } from "./sandbox.js";

/**
 * What the kernel shows of a local agent sandbox that stopped beating (workers/frozen-verdict.ts):
 * a stop out of the agent's reach — its bwrap (outside the sandbox's pid namespace) or, in a sandbox
 * of two users, a process of the supervisor's user — or, in a sandbox of one user, its supervisor
 * stopped (which the agent's commands could have done themselves).
 */
export function freezeEvidenceOf(
  agent: Pick<RunningAgent, "pid" | "users" | "heartbeatAgeMs">,
): FreezeEvidence {
  const heartbeatAgeMs = agent.heartbeatAgeMs();
  if (processStopped(agent.pid)) {
    return {
      heartbeatAgeMs,
      outsideFreeze: `its bwrap (pid ${agent.pid}, outside the sandbox's pid namespace) is stopped (state T)`,
    };
  }
  const rows = readProcRows();
  if (agent.users === "apart") {
    const held = stoppedOwnedBy(rows, agent.pid, SCORER_HOST_UID);
    const outsideFreeze = held
      ? `its process ${held.pid}, of the supervisor's user (the agent's commands run as another and cannot signal it), is stopped (state T)`
      : undefined;
    return { heartbeatAgeMs, outsideFreeze };
  }
  const sup = stoppedSupervisorOf(rows, agent.pid, commandLineOf);
  const insideStop = sup ? `its supervisor (pid ${sup.pid}) is stopped (state T)` : undefined;
  return { heartbeatAgeMs, outsideFreeze: undefined, insideStop };
}

const SUPERVISOR_FILE = basename(SUPERVISOR_PATH);

/** The stopped supervisor among `root`'s descendants (its command line names the supervisor script), else undefined. */
export function stoppedSupervisorOf(
  rows: readonly ProcRow[],
  root: number,
  cmdline: (pid: number) => string,
): ProcRow | undefined {
  return stoppedDescendantOf(rows, root, (r) =>
    cmdline(r.pid)
      .split("\0")
      .some((a) => basename(a) === SUPERVISOR_FILE),
  );
}

/** A process's command line (NUL-separated), or "" when it is gone or unreadable. */
function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}
