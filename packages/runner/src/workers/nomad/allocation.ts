import type { Allocation, AllocationListStub, Evaluation, NomadClient } from "@flakegym/nomad-jobs";
import { NomadError } from "@flakegym/nomad-jobs";
import { match } from "ts-pattern";
import { NomadWorkerError } from "./errors.js";
import type { NomadProgress } from "./progress.js";

/**
 * Following one job's allocation through Nomad's lifecycle with blocking queries, and turning
 * what Nomad reports (allocation status, task events, placement metrics) into errors a user can
 * act on.
 */

export interface FollowContext {
  readonly client: NomadClient;
  readonly jobId: string;
  readonly signal: AbortSignal;
  /** Epoch ms. */
  readonly deadline: number;
  /** Longest single blocking query. */
  readonly pollMs: number;
  readonly onProgress?: ((p: NomadProgress) => void) | undefined;
  /** What the deadline is for, in messages ("start", "exec"). */
  readonly purpose: string;
  /** The backend's namespace (else the client's, from NOMAD_NAMESPACE). */
  readonly namespace?: string | undefined;
  /** The last lines of a failed allocation's stderr, for its error (never throws). */
  readonly stderrTail?: (allocId: string) => Promise<string | undefined>;
}

const TERMINAL = new Set(["complete", "failed", "lost", "unknown"]);

export function isTerminal(a: { ClientStatus: string }): boolean {
  return TERMINAL.has(a.ClientStatus);
}

/** "Driver Failure: failed to pull image ..." lines, oldest first, for every task. */
export function describeTaskEvents(alloc: Pick<Allocation, "TaskStates">, maxPerTask = 10): string[] {
  const out: string[] = [];
  for (const [task, st] of Object.entries(alloc.TaskStates)) {
    const events = st.Events.slice(-maxPerTask);
    for (const e of events) {
      const text = e.DisplayMessage || e.DriverError || e.Message || e.SetupError || e.KillReason || "";
      out.push(`task ${task}: ${e.Type}${text ? `: ${text}` : ""}`);
    }
  }
  return out;
}

/** The exit code of a task's last run, from its Terminated event. */
export function exitCodeOf(alloc: Pick<Allocation, "TaskStates">, task: string): number | undefined {
  const events = alloc.TaskStates[task]?.Events ?? [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.Type === "Terminated") {
      const fromDetails = e.Details.exit_code;
      return e.ExitCode ?? (fromDetails === undefined ? undefined : Number(fromDetails));
    }
  }
  return undefined;
}

/**
 * Whether Nomad ended the task — a stop or purge from outside, a drain, a lost node — rather than
 * the task ending by itself: a kill from outside the sandbox, which the command inside cannot fake
 * (it writes no allocation events). The allocation's own max_run_duration is its deadline, not a
 * loss. An exec's PID 1 is its command's shell, so this, not the container's init, tells the two
 * apart on Nomad (exec-only-init.ts). Pure.
 */
export function killedByNomad(
  alloc: Pick<Allocation, "ClientStatus" | "ClientDescription" | "TaskStates">,
  task: string,
): boolean {
  if (alloc.ClientStatus === "lost") return true;
  const events = alloc.TaskStates[task]?.Events ?? [];
  const deadline = (e: TaskEventOf) =>
    /max_run_duration/.test(`${e.KillReason ?? ""} ${e.DisplayMessage ?? ""}`);
  if (/max_run_duration/.test(alloc.ClientDescription ?? "") || events.some(deadline)) return false;
  return events.some((e) => e.Type === "Killing" || e.Type === "Killed");
}

type TaskEventOf = Allocation["TaskStates"][string]["Events"][number];

const sameEvent = (a: TaskEventOf, b: TaskEventOf) =>
  a.Type === b.Type && a.Time === b.Time && (a.DisplayMessage ?? "") === (b.DisplayMessage ?? "");

/**
 * The events of `current` not in `previous`. Nomad keeps only a task's last 10 events
 * (client/allocrunner/taskrunner/task_runner.go `appendTaskEvent`), so the list is a sliding
 * window: counting seen events stops at 10. This finds where the old window's tail overlaps the
 * new one's head instead. Pure.
 */
export function unseenEvents(
  previous: readonly TaskEventOf[],
  current: readonly TaskEventOf[],
): TaskEventOf[] {
  for (let k = 0; k < previous.length; k++) {
    const tail = previous.slice(k);
    if (tail.length <= current.length && tail.every((e, i) => sameEvent(e, current[i]!))) {
      return current.slice(tail.length);
    }
  }
  return [...current];
}

function hasEvent(alloc: Pick<Allocation, "TaskStates">, type: string): boolean {
  return Object.values(alloc.TaskStates).some((s) => s.Events.some((e) => e.Type === type));
}

/** An error for an allocation that ended (or was lost) where it should have kept running. */
export function allocationError(
  alloc: Allocation | AllocationListStub,
  jobId: string,
  what: string,
  stderrTail?: string,
): NomadWorkerError {
  const events = describeTaskEvents(alloc);
  const where = alloc.NodeName ? ` on node ${alloc.NodeName}` : "";
  const detail = [
    ...events.map((l) => `  ${l}`),
    ...(stderrTail ? ["  last lines of stderr:", ...stderrTail.split("\n").map((l) => `    ${l}`)] : []),
  ].join("\n");
  const head = `allocation ${alloc.ID} of job ${jobId}${where}`;
  return match(alloc.ClientStatus)
    .with(
      "lost",
      "unknown",
      (s) =>
        new NomadWorkerError(
          "E_NOMAD_ALLOC_LOST",
          `${head} is ${s} (${alloc.ClientDescription || "its node stopped reporting"}) ${what}${detail ? `\n${detail}` : ""}`,
          {
            jobId,
            allocId: alloc.ID,
            hint: "the client node went down or lost contact with the servers; this is an infrastructure failure: the trajectory is recorded as infra_error and may be retried",
          },
        ),
    )
    .otherwise((s) => {
      const driverFailure = hasEvent(alloc, "Driver Failure") || hasEvent(alloc, "Setup Failure");
      return new NomadWorkerError(
        "E_NOMAD_ALLOC_FAILED",
        `${head} ${s === "complete" ? "exited" : "failed"} ${what}: ${alloc.ClientDescription || s}${detail ? `\n${detail}` : ""}`,
        {
          jobId,
          allocId: alloc.ID,
          hint: driverFailure
            ? "the task driver could not start the worker: check the image or flake output and the client's driver configuration (docs/reference/nomad.md, Client configuration)"
            : `the worker process exited: read its logs with 'nomad alloc logs -stderr ${alloc.ID}'`,
        },
      );
    });
}

/**
 * Summarizes why an evaluation could not place a group. `hopeless` when nodes were evaluated and
 * every one was filtered out (missing driver, constraints): waiting cannot help. When no node was
 * evaluated at all (nodes down, draining, a pool scaling from zero) Nomad keeps a blocked
 * evaluation and places once capacity appears, so that waits, bounded by the caller's deadline.
 */
export function describePlacement(
  evals: readonly Evaluation[],
): { reason: string; hopeless: boolean } | undefined {
  for (const e of evals) {
    for (const [group, m] of Object.entries(e.FailedTGAllocs)) {
      const parts: string[] = [];
      const evaluated = m.NodesEvaluated ?? 0;
      parts.push(`${evaluated} node${evaluated === 1 ? "" : "s"} evaluated`);
      for (const [k, n] of Object.entries(m.ConstraintFiltered)) parts.push(`${n} filtered by '${k}'`);
      for (const [k, n] of Object.entries(m.ClassFiltered)) parts.push(`${n} of class ${k} filtered`);
      for (const [k, n] of Object.entries(m.DimensionExhausted)) parts.push(`${n} exhausted on ${k}`);
      for (const q of m.QuotaExhausted) parts.push(`quota exhausted: ${q}`);
      const filtered = m.NodesFiltered ?? 0;
      const hopeless = evaluated > 0 && filtered >= evaluated;
      if (evaluated === 0)
        parts.push("no client node in the job's datacenters and node pool is ready (waiting for one)");
      return { reason: `group ${group}: ${parts.join(", ")}`, hopeless };
    }
  }
  return undefined;
}

function newest<T extends { CreateIndex: number }>(xs: readonly T[]): T | undefined {
  return [...xs].sort((a, b) => b.CreateIndex - a.CreateIndex)[0];
}

function timeLeft(ctx: FollowContext): number {
  return ctx.deadline - Date.now();
}

/**
 * Waits until the job's allocation is running (`until: "running"`) or has finished
 * (`until: "terminal"`, complete or failed). Throws, with Nomad's own explanation, on a placement
 * nobody can satisfy, on a lost allocation, on an allocation that ends while it should run, and
 * at the deadline.
 */
export async function followAllocation(
  ctx: FollowContext,
  until: "running" | "terminal",
): Promise<Allocation> {
  const { client, jobId } = ctx;
  const ns = ctx.namespace ? { namespace: ctx.namespace } : {};
  const signal = ctx.signal;
  let evalIndex: number | undefined;
  let allocId: string | undefined;
  let allocIndex: number | undefined;
  let last: Allocation | undefined;
  let lastPlacement = "";
  const seenEvents = new Map<string, readonly TaskEventOf[]>();
  for (;;) {
    const left = timeLeft(ctx);
    if (left <= 0) {
      let reason = last ? `allocation ${last.ID} is still ${last.ClientStatus}` : "no allocation was placed";
      if (!last) {
        const p = describePlacement((await client.jobs.evaluations(jobId, { signal, ...ns })).data);
        if (p) reason += `: ${p.reason}`;
      }
      const events = last ? describeTaskEvents(last).map((l) => `\n  ${l}`) : [];
      throw new NomadWorkerError(
        "E_NOMAD_START_TIMEOUT",
        `job ${jobId}: ${ctx.purpose} deadline passed: ${reason}${events.join("")}`,
        {
          jobId,
          ...(last ? { allocId: last.ID } : {}),
          hint: last
            ? "the task is slow to start (image pull? nix build?): raise the backend's startTimeoutMs or pre-pull the image on the clients"
            : "the cluster has no free capacity for this job: add clients, lower the worker's resources, or run fewer workers at once",
        },
      );
    }
    const waitMs = Math.max(1, Math.min(left, ctx.pollMs));
    if (allocId === undefined) {
      const stub = newest((await client.jobs.allocations(jobId, {}, { signal, ...ns })).data);
      if (stub) {
        allocId = stub.ID;
        ctx.onProgress?.({ kind: "placed", jobId, allocId, node: stub.NodeName ?? stub.NodeID ?? "" });
        continue;
      }
      // Nothing placed yet: wait for the job's evaluations to change (one finishes when it has
      // placed the allocation, or has failed to and says why).
      const evals = await client.jobs.evaluations(jobId, {
        signal,
        ...ns,
        ...(evalIndex !== undefined ? { index: evalIndex, waitMs } : {}),
      });
      evalIndex = evals.meta.index ?? evalIndex ?? 0;
      const p = describePlacement(evals.data);
      if (p?.hopeless) {
        throw new NomadWorkerError("E_NOMAD_PLACEMENT", `job ${jobId} cannot be placed: ${p.reason}`, {
          jobId,
          hint: "no client node can run this job: check that clients in the job's datacenters and node pool run its task driver (nomad node status -verbose) and meet its constraints",
        });
      }
      if (p && p.reason !== lastPlacement) {
        lastPlacement = p.reason;
        ctx.onProgress?.({ kind: "waiting", jobId, reason: p.reason });
      }
      continue;
    }
    const r = await client.allocations.info(allocId, {
      signal,
      ...ns,
      ...(allocIndex !== undefined ? { index: allocIndex, waitMs } : {}),
    });
    allocIndex = r.meta.index ?? allocIndex ?? 0;
    last = r.data;
    for (const [task, st] of Object.entries(last.TaskStates)) {
      for (const e of unseenEvents(seenEvents.get(task) ?? [], st.Events)) {
        ctx.onProgress?.({
          kind: "task-event",
          jobId,
          allocId,
          task,
          type: e.Type,
          message: e.DisplayMessage ?? "",
        });
      }
      seenEvents.set(task, st.Events);
    }
    const status = last.ClientStatus;
    if (status === "pending") continue;
    if (status === "running") {
      if (until === "running") return last;
      continue;
    }
    if (until === "terminal" && (status === "complete" || status === "failed")) return last;
    // an allocation that failed before it was seen running says why on its stderr
    const tail = status === "failed" ? await ctx.stderrTail?.(last.ID) : undefined;
    throw allocationError(
      last,
      jobId,
      until === "running" ? "before its core answered" : "while running",
      tail,
    );
  }
}

/**
 * Watches an allocation in the background (blocking queries) so a caller doing something else
 * (probing a port) learns at once when it ends. `stop()` ends the watch.
 */
export function watchAllocation(client: NomadClient, alloc: Allocation, pollMs: number, namespace?: string) {
  const ac = new AbortController();
  let latest = alloc;
  let failure: unknown;
  const loop = (async () => {
    let index = alloc.ModifyIndex;
    while (!ac.signal.aborted && !isTerminal(latest)) {
      try {
        const r = await client.allocations.info(alloc.ID, {
          signal: ac.signal,
          index,
          waitMs: pollMs,
          ...(namespace ? { namespace } : {}),
        });
        latest = r.data;
        index = r.meta.index ?? index;
      } catch (err) {
        if (ac.signal.aborted) return;
        if (!(err instanceof NomadError) || err.code !== "E_NOMAD_TIMEOUT") failure = err;
        return;
      }
    }
  })();
  return {
    latest: () => latest,
    failure: () => failure,
    async stop() {
      ac.abort();
      await loop;
    },
  };
}
