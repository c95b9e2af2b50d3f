import type { UpstreamEvent } from "../policy/chat.js";
import type { SamplingParams } from "../policy/sampling.js";
import type { PolicyUpstream, PortableUpstream, UpstreamCall } from "../policy/upstream.js";
import type { GatewayTerminal, ListenSpec, TrajectoryLimitsInput, TrajectoryStatus } from "./types.js";

/**
 * The messages between the runner's thread and the gateway's own thread (gateway/thread.ts). The
 * control plane (register, unregister, status, close, terminal verdicts) and the calls of upstreams
 * that live in the runner's thread (scripted plans) cross it; the data plane (the Cline cores' HTTP
 * calls, portable upstreams, turn logs) stays in the gateway's thread.
 */

/** `workerData` of the gateway thread. */
export interface ThreadInit {
  readonly listen: readonly ListenSpec[];
  readonly maxBodyBytes: number | undefined;
  readonly maxCallsPerTrajectory: number | undefined;
  readonly measureRunTime: boolean | undefined;
  /** The runner's secrets when the thread starts (each register brings the ones added since). */
  readonly secrets: readonly string[];
  /** `[0]` is set to a request's number when its synchronous answer is on `syncPort`. */
  readonly syncFlag: SharedArrayBuffer;
}

/** Where a registered trajectory's calls go. */
export type ThreadUpstream =
  | { readonly portable: PortableUpstream }
  /** Calls go back to the runner's thread, which holds the upstream object. */
  | {
      readonly proxy: {
        readonly id: string;
        readonly kind: PolicyUpstream["kind"];
        readonly secrets: readonly string[];
      };
    };

/** An error as it crosses: an UpstreamError keeps its status and terminal mark. */
export interface ThreadError {
  readonly message: string;
  readonly upstream?: { readonly status: number; readonly terminal: boolean };
}

/** Runner → gateway thread. */
export type ToGateway =
  | {
      readonly op: "register";
      readonly trajectoryId: string;
      readonly token: string;
      readonly upstream: ThreadUpstream;
      readonly limits: TrajectoryLimitsInput | undefined;
      readonly turnLogPath: string | undefined;
      readonly sampling: SamplingParams | undefined;
      readonly secrets: readonly string[];
    }
  | { readonly op: "unregister"; readonly trajectoryId: string; readonly reply: number }
  /** Answered on the sync port (the caller blocks on `syncFlag`). */
  | { readonly op: "status"; readonly trajectoryId: string; readonly reply: number }
  | { readonly op: "close"; readonly reply: number }
  | { readonly op: "event"; readonly callId: number; readonly event: UpstreamEvent }
  | { readonly op: "end"; readonly callId: number }
  | { readonly op: "fail"; readonly callId: number; readonly error: ThreadError };

/** Gateway thread → runner. */
export type FromGateway =
  | { readonly op: "ready"; readonly origin: string | undefined; readonly socketPath: string | undefined }
  | { readonly op: "terminal"; readonly trajectoryId: string; readonly terminal: GatewayTerminal }
  | { readonly op: "reply"; readonly reply: number; readonly status: TrajectoryStatus | undefined }
  | { readonly op: "call"; readonly callId: number; readonly call: UpstreamCall }
  | { readonly op: "abort"; readonly callId: number };

/** The answer to a `status` request, on the sync port. */
export interface SyncAnswer {
  readonly reply: number;
  readonly status: TrajectoryStatus | undefined;
}
