import { createAtroposClient } from "../emit/atropos/client.js";
import {
  type AtroposEmitter,
  createAtroposEmitter,
  markedGroups,
  type PushResult,
} from "../emit/atropos/emitter.js";
import { toScoredDataGroup } from "../emit/group.js";
import type { RunPaths } from "../run-format/run-dir.js";
import type { GroupLine, RunConfig } from "../run-format/schema.js";

/**
 * A run's groups on their way to Atropos (`--atropos`): one sender, groups pushed in order; a group
 * it cannot send stays pending on disk (groups.jsonl) for a resumed run to send.
 */

export type GroupSendStatus = "sent" | "dropped" | "pending";

export interface GroupSender {
  /** Whether the run sends its groups to Atropos at all. */
  readonly enabled: boolean;
  /** Queues a group line; false when there was nothing to do (no Atropos, or already sent/dropped). */
  send(line: GroupLine): boolean;
  /** Waits for every queued send. */
  drain(): Promise<void>;
  /** Where a group stands: "off" without Atropos, else sent/dropped/pending (pending when never tried). */
  statusOf(groupId: string): GroupSendStatus | "off";
  /** Waits until Atropos may take more groups (at once without Atropos). */
  waitForCapacity(signal: AbortSignal): Promise<void>;
  /** Leaves Atropos (bounded by `signal`). */
  disconnect(signal: AbortSignal): Promise<void>;
}

/** Whether a group still needs sending, given what the marks file says of it. Pure. */
export function needsSending(status: GroupSendStatus | undefined): boolean {
  return status !== "sent" && status !== "dropped";
}

/** The progress note of one push. Pure. */
export function pushNoteOf(groupId: string, r: PushResult): string {
  return `atropos: group ${groupId} ${r.status}${r.status === "sent" ? "" : `: ${"detail" in r ? r.detail : ""}`}`;
}

export async function createGroupSender(o: {
  readonly config: RunConfig;
  readonly paths: RunPaths;
  readonly signal: AbortSignal;
  readonly pollMs: number;
  readonly note: (message: string) => void;
  readonly isAbort: (err: unknown) => boolean;
}): Promise<GroupSender> {
  const { config: cfg, paths: p, signal, note } = o;
  let emitter: AtroposEmitter | undefined;
  let sendChain: Promise<void> = Promise.resolve();
  const status = new Map<string, GroupSendStatus>();
  if (cfg.atropos) {
    const a = cfg.atropos;
    emitter = createAtroposEmitter({
      client: createAtroposClient({ url: a.url }),
      register: {
        max_token_length: a.maxTokenLength,
        desired_name: a.name,
        weight: 1,
        group_size: cfg.groupSize,
      },
      dropEqualScores: a.dropEqualScores,
      maxBatchesOffpolicy: a.maxBatchesOffpolicy,
      markFile: p.atroposMarks,
      pollMs: o.pollMs,
      waitMs: a.waitMs,
      attempts: 3,
      backoffMs: 1000,
      onEvent: note,
    });
    for (const [gid, m] of await markedGroups(p.atroposMarks)) status.set(gid, m.status);
  }
  return {
    enabled: emitter !== undefined,
    send(line) {
      if (!emitter) return false;
      const gid = String(line.group_overrides?.group_id);
      if (!needsSending(status.get(gid))) return false;
      sendChain = sendChain.then(async () => {
        const sdg = toScoredDataGroup(line);
        if (!sdg) {
          status.set(gid, "pending");
          return;
        }
        try {
          const r = await emitter!.push(gid, sdg, signal);
          status.set(gid, r.status);
          note(pushNoteOf(gid, r));
        } catch (err) {
          status.set(gid, "pending");
          if (!o.isAbort(err)) note(`atropos: group ${gid} pending: ${(err as Error).message}`);
        }
      });
      return true;
    },
    drain: () => sendChain,
    statusOf: (gid) => (!cfg.atropos ? "off" : (status.get(gid) ?? "pending")),
    async waitForCapacity(s) {
      if (emitter) await emitter.waitForCapacity(s);
    },
    async disconnect(s) {
      await emitter?.disconnect(s);
    },
  };
}
