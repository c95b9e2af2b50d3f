import type { Writable } from "node:stream";
import { runSecrets } from "../redact/redactor.js";
import type { ProgressEvent, TrajectoryPhase } from "./events.js";

/**
 * Shows a run's progress. On a TTY: a live view with one line per task and one per trajectory,
 * redrawn in place (throttled). Otherwise: one plain line per state change, greppable.
 */

interface TrajRow {
  taskId: string;
  phase: TrajectoryPhase;
  turns?: number;
  outcome?: string;
  reward?: number | null;
  detail?: string;
  since: number;
  retries: number;
}

export interface ViewState {
  readonly tasks: Map<string, { phase: string; detail?: string }>;
  readonly trajectories: Map<string, TrajRow>;
  readonly notes: string[];
  /** The warm pool's line, when the run has one. */
  pool?: string;
}

export function emptyView(): ViewState {
  return { tasks: new Map(), trajectories: new Map(), notes: [] };
}

/** Folds one event into the view state. Pure apart from reading the clock passed in. */
export function applyEvent(view: ViewState, e: ProgressEvent, now: number): void {
  switch (e.type) {
    case "task":
      view.tasks.set(e.taskId, { phase: e.phase, ...(e.detail ? { detail: e.detail } : {}) });
      break;
    case "trajectory": {
      const prev = view.trajectories.get(e.trajectoryId);
      view.trajectories.set(e.trajectoryId, {
        taskId: e.taskId,
        phase: e.phase,
        since: prev?.phase === e.phase ? prev.since : now,
        retries: prev?.retries ?? 0,
        ...(e.turns !== undefined
          ? { turns: e.turns }
          : prev?.turns !== undefined
            ? { turns: prev.turns }
            : {}),
        ...(e.outcome ? { outcome: e.outcome } : {}),
        ...(e.reward !== undefined ? { reward: e.reward } : {}),
        ...(e.detail ? { detail: e.detail } : {}),
      });
      break;
    }
    case "retry": {
      const row = view.trajectories.get(e.trajectoryId);
      if (row) row.retries = e.attempt;
      view.notes.push(`${e.trajectoryId}: infra failure, retry ${e.attempt}: ${e.detail}`);
      break;
    }
    case "note":
      view.notes.push(e.message);
      break;
    case "pool":
      view.pool = poolLine(e);
      break;
  }
  if (view.notes.length > 5) view.notes.splice(0, view.notes.length - 5);
}

const secs = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`;

/** Renders the live view as lines (pure). */
export function renderView(view: ViewState, now: number, width = 120): string[] {
  const lines: string[] = [];
  const idWidth = Math.max(0, ...[...view.trajectories.keys()].map((id) => id.length));
  for (const [taskId, t] of view.tasks) {
    const trajs = [...view.trajectories.entries()].filter(([, r]) => r.taskId === taskId);
    const done = trajs.filter(([, r]) => r.phase === "done").length;
    lines.push(`task ${taskId}  ${t.phase}${t.detail ? ` (${t.detail})` : ""}  ${done}/${trajs.length} done`);
    for (const [id, r] of trajs) {
      const bits = [`  ${id.padEnd(idWidth)}`, r.phase.padEnd(10)];
      if (r.phase === "done") bits.push(r.outcome ?? "");
      else bits.push(secs(now - r.since).padStart(6));
      if (r.turns !== undefined) bits.push(`turns ${r.turns}`);
      if (r.phase === "done")
        bits.push(r.reward === null || r.reward === undefined ? "reward -" : `reward ${r.reward.toFixed(2)}`);
      if (r.retries) bits.push(`retries ${r.retries}`);
      if (r.detail && r.phase !== "done") bits.push(r.detail);
      lines.push(bits.join("  ").slice(0, width));
    }
  }
  if (view.pool) lines.push(view.pool.slice(0, width));
  for (const n of view.notes) lines.push(n.slice(0, width));
  return lines;
}

/** One plain line for an event (non-TTY), or undefined for events not worth a line. */
export function plainLine(e: ProgressEvent): string | undefined {
  switch (e.type) {
    case "task":
      return `task ${e.taskId}: ${e.phase}${e.detail ? ` (${e.detail})` : ""}`;
    case "trajectory":
      if (e.phase === "done") {
        const reward = e.reward === null || e.reward === undefined ? "-" : e.reward.toFixed(2);
        return `trajectory ${e.trajectoryId}: done outcome=${e.outcome ?? "?"} reward=${reward}${e.turns !== undefined ? ` turns=${e.turns}` : ""}${e.detail ? ` (${e.detail})` : ""}`;
      }
      if (e.phase === "agent" && e.turns !== undefined) return undefined; // per-turn ticks only on a TTY
      return `trajectory ${e.trajectoryId}: ${e.phase}${e.detail ? ` (${e.detail})` : ""}`;
    case "retry":
      return `trajectory ${e.trajectoryId}: infra failure, retry ${e.attempt}: ${e.detail}`;
    case "note":
      return e.message;
    case "pool":
      return undefined; // each trajectory's line says pooled or cold; unavailability comes as a note
  }
}

/** The warm pool as one line (pure). */
export function poolLine(e: Extract<ProgressEvent, { type: "pool" }>): string {
  const served = `${e.pooled} pooled, ${e.cold} cold`;
  return e.unavailable
    ? `pool: unavailable (${e.unavailable}); ${served}`
    : `pool: ${e.idle} idle, ${e.booting} booting; ${served}`;
}

export interface Reporter {
  readonly sink: (e: ProgressEvent) => void;
  /** Stops redrawing and leaves the final view on screen. */
  close(): void;
}

/** A reporter writing to `out`: live view when `out.isTTY`, else plain lines. */
export function createReporter(
  out: Writable & { isTTY?: boolean; columns?: number },
  opts: { live?: boolean } = {},
): Reporter {
  const live = opts.live ?? out.isTTY === true;
  if (!live) {
    return {
      sink: (e) => {
        const line = plainLine(e);
        if (line) out.write(runSecrets.text(`${line}\n`));
      },
      close() {},
    };
  }
  const view = emptyView();
  let drawn = 0;
  let dirty = false;
  const draw = () => {
    if (!dirty) return;
    dirty = false;
    const lines = renderView(view, Date.now(), (out.columns ?? 120) - 1);
    let s = drawn > 0 ? `\x1b[${drawn}F` : "";
    for (const l of lines) s += `\x1b[2K${l}\n`;
    if (lines.length < drawn) s += "\x1b[J";
    out.write(runSecrets.text(s));
    drawn = lines.length;
  };
  const timer = setInterval(() => {
    dirty = true;
    draw();
  }, 250);
  timer.unref();
  return {
    sink: (e) => {
      applyEvent(view, e, Date.now());
      dirty = true;
    },
    close() {
      clearInterval(timer);
      dirty = true;
      draw();
    },
  };
}
