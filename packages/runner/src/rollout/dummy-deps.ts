import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FlakegymError } from "../errors.js";
import type { ChatTokenizer } from "../export/tokenizer.js";
import { readTurnLog, type TurnRecord } from "../gateway/turn-log.js";
import type { Outcome, Score } from "../run-format/schema.js";
import type { AgentAttempt, RolloutDeps, RolloutTask } from "./deps.js";
import type { TrajectorySlot } from "./plan.js";
import { trajectoryExportOf } from "./trajectory-export.js";

/**
 * A faithful in-process `RolloutDeps` for testing the orchestrator (`runRollout`: retries,
 * concurrency, resume, files) without workers, cores or snapshots. Each agent attempt follows a
 * script; every call is recorded; scoring turns the script's reward into a score.
 */

/** What one agent attempt does: end with an outcome (after `ms`), or throw. */
export type DummyAttempt =
  | { readonly outcome: Outcome; readonly ms?: number; readonly reward?: number }
  | { readonly throws: Error; readonly ms?: number };

export interface DummyDepsOptions {
  /** Task ids that exist (others fail to load with E_TASK_NOT_FOUND). Default: any id. */
  readonly tasks?: readonly string[];
  /** Attempt `n` (0-based) of a slot. Default: completed after 5 ms, reward 1. */
  readonly attempt?: (slot: TrajectorySlot, n: number) => DummyAttempt;
  /** Called as an attempt starts (tests use it to interrupt a run at a known point). */
  readonly onAttempt?: (slot: TrajectorySlot, n: number) => void;
  /** Scoring `n` (0-based) of a slot throws this (the machinery lost a scoring run). Default: none. */
  readonly scoreThrows?: (slot: TrajectorySlot, n: number) => Error | undefined;
  /**
   * The turn log attempt `n` of a slot leaves (`turns.jsonl`: records, or raw text such as a
   * corrupt file). Default: none, as before.
   */
  readonly turnLog?: (slot: TrajectorySlot, n: number) => readonly TurnRecord[] | string | undefined;
  /** With a tokenizer, the group export is the real one (trajectoryExportOf over the turn log). */
  readonly tokenizer?: ChatTokenizer;
  /** A task's snapshot tree: its recorded digest and the paths that differ from it (none by default). */
  readonly tree?: (taskId: string) => { digest: string; changed?: readonly string[] } | undefined;
}

export interface DummyDeps extends RolloutDeps {
  /** Trajectory ids in the order their agent attempts started (a retried one appears again). */
  readonly agentCalls: string[];
  /** Trajectory ids in the order they were scored. */
  readonly scoreCalls: string[];
  /** Each task's snapshot, with how many of its trajectories the run said it starts. */
  readonly snapshotCalls: { readonly taskId: string; readonly trajectories: number }[];
  /** The most agent attempts and scorings that ran at once. */
  readonly maxConcurrent: () => number;
}

const COMPLETED: DummyAttempt = { outcome: { kind: "completed", detail: "dummy agent completed" } };

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The one task shape the dummy serves, named `id`. */
const dummyTask = (id: string): RolloutTask => ({
  id,
  rowId: `dummy/${id}`,
  profile: "node",
  prompt: `solve ${id}`,
  network: "none",
  hidden: { testFiles: [], commands: [], timeoutMs: 1000 },
});

/** A score of `reward` from one tests term. */
const dummyScore = (reward: number, diffBytes: number): Score => ({
  reward,
  terms: [{ name: "tests", weight: 1, value: reward }],
  flaky: [],
  touchedTestFiles: [],
  diffBytes,
  durationMs: 2,
});

export function createDummyDeps(o: DummyDepsOptions = {}): DummyDeps {
  const agentCalls: string[] = [];
  const scoreCalls: string[] = [];
  const snapshotCalls: DummyDeps["snapshotCalls"] = [];
  const attempts = new Map<string, number>();
  const rewards = new Map<string, number>();
  let running = 0;
  let max = 0;
  const busy = async <T>(fn: () => Promise<T>): Promise<T> => {
    running++;
    max = Math.max(max, running);
    try {
      return await fn();
    } finally {
      running--;
    }
  };
  return {
    agentCalls,
    scoreCalls,
    snapshotCalls,
    maxConcurrent: () => max,
    async loadTask(id): Promise<RolloutTask> {
      if (o.tasks && !o.tasks.includes(id))
        throw new FlakegymError("E_TASK_NOT_FOUND", `no task '${id}' among the dummy tasks`);
      return dummyTask(id);
    },
    async snapshot(task, _signal, _progress, trajectories, startedFrom) {
      snapshotCalls.push({ taskId: task.id, trajectories });
      const tree = o.tree?.(task.id);
      const changed = startedFrom !== undefined ? { treeChanged: tree?.changed ?? [] } : {};
      return {
        key: `${task.id}`.padEnd(64, "0"),
        cached: true,
        ...(tree ? { treeDigest: tree.digest, ...changed } : {}),
      };
    },
    async runAgent(input): Promise<AgentAttempt> {
      const id = input.slot.trajectoryId;
      const n = attempts.get(id) ?? 0;
      attempts.set(id, n + 1);
      agentCalls.push(id);
      o.onAttempt?.(input.slot, n);
      const script = o.attempt?.(input.slot, n) ?? COMPLETED;
      return await busy(async () => {
        await delay(script.ms ?? 5, input.signal);
        await writeFile(join(input.dir, "attempt.txt"), `attempt ${n}\n`);
        const log = o.turnLog?.(input.slot, n);
        if (log !== undefined)
          await writeFile(
            join(input.dir, "turns.jsonl"),
            typeof log === "string" ? log : log.map((t) => `${JSON.stringify(t)}\n`).join(""),
          );
        if ("throws" in script) throw script.throws;
        rewards.set(id, script.reward ?? 1);
        return {
          outcome: script.outcome,
          bootOk: true,
          forkMs: 1,
          bootMs: 1,
          agentMs: script.ms ?? 5,
          counts: { turns: 1, tokensIn: 10, tokensOut: 5 },
          diff: `diff of ${id}\n`,
        };
      });
    },
    async score(input): Promise<Score> {
      const n = scoreCalls.filter((x) => x === input.slot.trajectoryId).length;
      scoreCalls.push(input.slot.trajectoryId);
      return await busy(async () => {
        await delay(2, input.signal);
        const lost = o.scoreThrows?.(input.slot, n);
        if (lost) throw lost;
        const reward = rewards.get(input.slot.trajectoryId) ?? 0;
        return dummyScore(reward, input.diff.length);
      });
    },
    async exportTrajectory({ dir, result }) {
      if (!o.tokenizer) return { messages: [{ role: "user", content: result.prompt }] };
      // as the wiring does: an unreadable turn log is an empty one
      const turns = await readTurnLog(join(dir, "turns.jsonl")).catch(() => [] as TurnRecord[]);
      return trajectoryExportOf(turns, result, "last", o.tokenizer);
    },
    async provenance() {
      return { cline: { version: "dummy" } };
    },
    async close() {},
  };
}
