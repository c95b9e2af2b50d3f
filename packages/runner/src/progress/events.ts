import type { OutcomeKind } from "@flakegym/cline-vendor";

/** What a run reports while it works; the reporter turns these into lines on a terminal. */

export type TrajectoryPhase = "queued" | "forking" | "booting" | "agent" | "collecting" | "scoring" | "done";

export type ProgressEvent =
  | {
      readonly type: "task";
      readonly taskId: string;
      readonly phase: "snapshot" | "running" | "group" | "done";
      readonly detail?: string;
    }
  | {
      readonly type: "trajectory";
      readonly trajectoryId: string;
      readonly taskId: string;
      readonly phase: TrajectoryPhase;
      readonly turns?: number;
      readonly outcome?: OutcomeKind;
      readonly reward?: number | null;
      readonly detail?: string;
    }
  | {
      readonly type: "retry";
      readonly trajectoryId: string;
      readonly attempt: number;
      readonly detail: string;
    }
  | { readonly type: "note"; readonly message: string }
  | {
      /** The warm pool's state (workers/pool): shown as one line of the live view. */
      readonly type: "pool";
      readonly idle: number;
      readonly booting: number;
      readonly pooled: number;
      readonly cold: number;
      readonly unavailable?: string;
    };

export type ProgressSink = (event: ProgressEvent) => void;
