import { randomBytes } from "node:crypto";
import { z } from "zod";
import { FlakegymError, UsageError } from "../errors.js";
import { DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES_CAP } from "../policy/limit-response.js";
import type { SamplingParams } from "../policy/sampling.js";
import type { PolicyUpstream } from "../policy/upstream.js";
import type { TurnLogWriter } from "./turn-log.js";

/** Per-trajectory limits and watchdog settings. */
export const TrajectoryLimits = z
  .object({
    maxRequests: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("model calls allowed; the next one is refused"),
    maxCompletionTokens: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("sampled tokens allowed in total; calls after the budget is spent are refused"),
    silenceTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe("upstream silence allowed (before the first event and between events) before 504"),
    totalTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(600_000)
      .describe("wall time one model call may take"),
    maxResponseBytes: z
      .number()
      .int()
      .positive()
      .max(MAX_RESPONSE_BYTES_CAP)
      .default(DEFAULT_MAX_RESPONSE_BYTES)
      .describe("bytes the upstream may send for one call; more fails the call as the policy's fault"),
    maxConsecutiveFailures: z
      .number()
      .int()
      .positive()
      .default(3)
      .describe("upstream failures in a row that end the trajectory as policy_error"),
    deadlineAt: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "when the trajectory's time ends (epoch ms): a model server's Retry-After that would pass it is not waited, the call fails as the model server's; a call still answering then is cut as the model server's",
      ),
  })
  .strict();
export type TrajectoryLimits = z.infer<typeof TrajectoryLimits>;
export type TrajectoryLimitsInput = z.input<typeof TrajectoryLimits>;

/** Why the gateway ended a trajectory; the driver maps it to the trajectory's Outcome. */
export interface GatewayTerminal {
  /** `infra_error`: the machine failed the call (its turn could not be logged: a full disk). */
  readonly kind: "limits_exceeded" | "timeout" | "policy_error" | "infra_error";
  /** For `limits_exceeded`: the budget that was spent. */
  readonly limit?: "model_requests" | "completion_tokens";
  readonly message: string;
  readonly at: string;
}

export interface TrajectoryStatus {
  readonly trajectoryId: string;
  readonly upstream: string;
  /** Model calls received (refused ones included). */
  readonly requests: number;
  readonly ok: number;
  readonly failed: number;
  readonly refused: number;
  readonly inFlight: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Set once the gateway has ended the trajectory (limit, watchdog, upstream failure). */
  readonly terminal: GatewayTerminal | undefined;
  /**
   * The last call the model server answered (ok, upstream_error, timeout: what its turn-log line
   * says, the error redacted), so that no caller reads the whole turn log back for it.
   */
  readonly lastAnswered: AnsweredCall | undefined;
}

/** A call the model server answered, as its turn-log line records it. */
export interface AnsweredCall {
  readonly status: "ok" | "upstream_error" | "timeout";
  readonly error?: string;
}

export interface RegisterOptions {
  readonly upstream: PolicyUpstream;
  readonly limits?: TrajectoryLimitsInput;
  /** Where the turn log goes (`turns.jsonl`); no log when absent. */
  readonly turnLogPath?: string;
  /** The token the core must present (default: a fresh random one). */
  readonly token?: string;
  /** Sampling parameters every call of the trajectory is sent with, instead of the client's. */
  readonly sampling?: SamplingParams;
}

/** What a worker needs to point a Cline core at this trajectory's endpoint. */
export interface TrajectoryRoute {
  readonly trajectoryId: string;
  /** The API key to configure in the core; valid for this trajectory only. */
  readonly token: string;
  /** Path prefix of this trajectory's endpoint (`/t/<id>`). */
  readonly path: string;
  /** OpenAI-compatible base URL (the SDK appends /chat/completions), on the gateway's TCP listener. */
  readonly openaiBaseUrl: string | undefined;
  /** Anthropic base URL (the SDK appends /v1/messages), on the gateway's TCP listener. */
  readonly anthropicBaseUrl: string | undefined;
  /** The base URLs behind another origin (e.g. a forwarder inside a sandbox that reaches the socket). */
  baseUrlsFor(origin: string): { readonly openai: string; readonly anthropic: string };
  /** Aborted (reason: the GatewayTerminal) when the gateway ends the trajectory. */
  readonly signal: AbortSignal;
  status(): TrajectoryStatus;
}

export type ListenSpec = { readonly host: string; readonly port: number } | { readonly socketPath: string };

export interface PolicyGatewayOptions {
  /** Loopback TCP and/or a unix socket (for sandboxed workers). */
  readonly listen: ListenSpec | readonly ListenSpec[];
  /** Called for an unregistered trajectory id; returning options registers it on the fly. */
  readonly resolveRoute?: (trajectoryId: string) => RegisterOptions | undefined;
  readonly signal?: AbortSignal;
  /** Largest request body accepted (default 64 MiB); a Content-Length above it is refused unread. */
  readonly maxBodyBytes?: number;
  /** Model calls one trajectory may have in flight; more are refused (429) before their body is read. Default 4. */
  readonly maxCallsPerTrajectory?: number;
  /**
   * Also time a sample of the calls (one in RUN_TIMED_EVERY) against the serving thread's CPU run
   * time (Linux schedstat; two reads per streamed event): turn log `latency.gatewayRunMs`. For
   * benchmarks on a shared machine.
   */
  readonly measureRunTime?: boolean;
}

export interface PolicyGateway {
  /** `http://host:port` of the TCP listener, when there is one. */
  readonly origin: string | undefined;
  readonly socketPath: string | undefined;
  register(trajectoryId: string, opts: RegisterOptions): TrajectoryRoute;
  /** Ends a trajectory's endpoint: aborts its in-flight calls and closes its turn log. */
  unregister(trajectoryId: string): Promise<TrajectoryStatus | undefined>;
  status(trajectoryId: string): TrajectoryStatus | undefined;
  close(): Promise<void>;
}

const TRAJECTORY_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Checks a registration: the id fits in a URL path and is not registered yet, and the limits are
 * valid; returns the limits with their defaults. Throws a UsageError/FlakegymError naming the id.
 */
export function checkRegistration(
  trajectoryId: string,
  registered: boolean,
  limits: TrajectoryLimitsInput | undefined,
): TrajectoryLimits {
  if (!TRAJECTORY_ID.test(trajectoryId)) {
    throw new UsageError(
      `trajectory id '${trajectoryId}' cannot be used in a URL path`,
      "use 1-128 characters from A-Z a-z 0-9 . _ -",
    );
  }
  if (registered) {
    throw new FlakegymError(
      "E_GATEWAY",
      `trajectory '${trajectoryId}' is already registered with the gateway`,
      {
        hint: "unregister it first, or use a fresh trajectory id",
      },
    );
  }
  const parsed = TrajectoryLimits.safeParse(limits ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UsageError(`gateway limits for '${trajectoryId}': ${i.path.join(".")}: ${i.message}`);
  }
  return parsed.data;
}

/** A trajectory's path prefix and its base URLs behind an origin. */
export function routePaths(trajectoryId: string): Pick<TrajectoryRoute, "path" | "baseUrlsFor"> {
  const path = `/t/${trajectoryId}`;
  return {
    path,
    baseUrlsFor: (o: string) => {
      const base = o.replace(/\/+$/, "");
      return { openai: `${base}${path}/v1`, anthropic: `${base}${path}` };
    },
  };
}

/** A fresh per-trajectory API key (matches the redactor's GATEWAY_TOKEN_PATTERN). */
export const newTrajectoryToken = () => `fg-${randomBytes(24).toString("base64url")}`;

/** A registered trajectory as the gateway keeps it. */
export interface Entry {
  readonly id: string;
  readonly token: string;
  readonly upstream: PolicyUpstream;
  readonly sampling: SamplingParams | undefined;
  readonly limits: TrajectoryLimits;
  /**
   * `limits.deadlineAt` on this thread's monotonic clock (performance.now()), fixed at registration:
   * a later jump of the wall clock does not move it. Undefined when no deadline was given.
   */
  readonly deadlineMono: number | undefined;
  readonly log: TurnLogWriter | undefined;
  readonly ended: AbortController;
  readonly calls: Set<AbortController>;
  /** Calls admitted and not yet finished (counted from before their body is read). */
  admitted: number;
  seq: number;
  ok: number;
  failed: number;
  refused: number;
  consecutiveFailures: number;
  promptTokens: number;
  completionTokens: number;
  terminal: GatewayTerminal | undefined;
  lastAnswered: AnsweredCall | undefined;
}

/** A trajectory's counters as callers see them. */
export function statusOf(e: Entry): TrajectoryStatus {
  return {
    trajectoryId: e.id,
    upstream: e.upstream.id,
    requests: e.seq,
    ok: e.ok,
    failed: e.failed,
    refused: e.refused,
    inFlight: e.calls.size,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    terminal: e.terminal,
    lastAnswered: e.lastAnswered,
  };
}
