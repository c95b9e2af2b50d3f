import { z } from "zod";
import { Owner } from "../gc/owner.js";

/**
 * Who holds a run directory's lock (`<run dir>/run.lock`): the owner's pid, start time, boot id and
 * pid namespace (so a reused pid or a reboot never passes for it), its host, what it runs and when it
 * started, and a nonce that tells two holders' records apart.
 */
export const RunLockRecord = Owner.extend({
  host: z.string().describe("hostname of the machine the holder runs on"),
  command: z
    .enum(["rollout", "serve", "eval", "env"])
    .describe("the command holding the directory (a run, a served group, an eval, an env session)"),
  startedAt: z.string().describe("ISO time the holder took the lock"),
  nonce: z.string().min(1).describe("random; tells this record from any other"),
}).strict();
export type RunLockRecord = z.infer<typeof RunLockRecord>;

/** Where the deciding process runs. */
export interface LockHere {
  readonly host: string;
  readonly bootId: string;
  readonly pidNs: string;
}

/** What to do about a lock file that exists. */
export type LockDecision =
  | { readonly kind: "take-over"; readonly why: string }
  | { readonly kind: "held"; readonly why: string };

/**
 * Whether an existing lock may be taken over: only when its holder is certainly dead (same host and,
 * after a reboot, or same boot and pid namespace with its pid gone or now another process).
 * `pidStartTime` is the start time /proc gives for the holder's pid now (undefined: no such
 * process). An unreadable record, another host or another pid namespace cannot be judged: held. Pure.
 */
export function decideLock(
  holder: RunLockRecord | undefined,
  here: LockHere,
  pidStartTime: string | undefined,
): LockDecision {
  if (!holder) return { kind: "held", why: "its lock file cannot be read, so its holder cannot be judged" };
  if (holder.host !== here.host)
    return { kind: "held", why: `its holder runs on another host (${holder.host}): its liveness is unknown` };
  if (holder.bootId !== here.bootId)
    return { kind: "take-over", why: `its holder (pid ${holder.pid}) ran before this machine rebooted` };
  if (holder.pidNs !== undefined && holder.pidNs !== here.pidNs)
    return { kind: "held", why: "its holder runs in another pid namespace: its liveness is unknown" };
  if (pidStartTime === holder.startTime) return { kind: "held", why: `pid ${holder.pid} is running` };
  return {
    kind: "take-over",
    why:
      pidStartTime === undefined
        ? `its holder (pid ${holder.pid}) is gone`
        : `its holder's pid ${holder.pid} is now another process`,
  };
}

/** The holder as an error names it: pid, host and start. Pure. */
export function describeHolder(holder: RunLockRecord | undefined): string {
  if (!holder) return "an unknown holder";
  return `flakegym ${holder.command} (pid ${holder.pid} on ${holder.host}, started ${holder.startedAt})`;
}
