import { FlakegymError } from "../errors.js";
import type { AnthropicUpstreamOptions } from "./anthropic-upstream.js";
import type { ChatRequest, UpstreamEvent } from "./chat.js";
import type { OpenAiUpstreamOptions } from "./openai-upstream.js";
import type { SamplingParams } from "./sampling.js";

/** The wire protocol the client (the Cline core) spoke to the gateway. */
export type ClientProtocol = "openai" | "anthropic";

/** One model call as the gateway hands it to an upstream. */
export interface UpstreamCall {
  readonly trajectoryId: string;
  /** 1-based number of this call within its trajectory. */
  readonly seq: number;
  readonly protocol: ClientProtocol;
  /** The request in canonical (OpenAI chat) form, system prompt first. */
  readonly request: ChatRequest;
  /** The body exactly as the client sent it (parsed JSON), for same-protocol pass-through. */
  readonly raw: Readonly<Record<string, unknown>>;
  /**
   * The bytes `raw` was parsed from, when the gateway has them: an upstream of the client's protocol
   * can forward them with a few members changed instead of serializing `raw` again.
   */
  readonly rawJson?: Uint8Array;
  /** The trajectory's sampling parameters: they replace what the client asked for. */
  readonly sampling?: SamplingParams;
  /** The most bytes the upstream may receive for this call (past it: ResponseTooLargeError). */
  readonly maxResponseBytes?: number;
  /** When the trajectory's time ends (epoch ms): no Retry-After is waited past it (policy/retry-after.ts). */
  readonly deadlineAt?: number;
}

/**
 * Where the gateway sends a turn. `complete` yields the answer as events; it throws
 * {@link UpstreamError} when the upstream refuses or fails. Implementations honour `signal`
 * (client gone, watchdog, unregister) by stopping promptly.
 */
export interface PolicyUpstream {
  /** Stable id for provenance, e.g. `openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B`; never a key. */
  readonly id: string;
  readonly kind: "openai" | "anthropic" | "scripted" | "gold" | "empty";
  /** Secret values this upstream holds (API keys); the gateway adds them to `runSecrets` when it registers a trajectory. */
  readonly secrets: readonly string[];
  /**
   * How to make the same upstream in another thread, as plain data: the gateway's own thread
   * (gateway/thread.ts) calls a portable upstream itself; it hands the calls of any other one (a
   * scripted plan keeps its cursors here) back to this thread.
   */
  readonly portable?: PortableUpstream;
  /**
   * True when, for an OpenAI-protocol call with `rawJson`, `complete` sends those bytes (a few
   * members set) and reads `request`/`raw` only if the bytes are not one JSON object: the gateway
   * then forwards the call before parsing its body (gateway/client-request.ts).
   */
  readonly forwardsClientJson?: boolean;
  complete(call: UpstreamCall, signal: AbortSignal): AsyncIterable<UpstreamEvent>;
}

/** An upstream's constructor options, which another thread can build the same upstream from. */
export type PortableUpstream =
  | { readonly kind: "openai"; readonly options: OpenAiUpstreamOptions }
  | { readonly kind: "anthropic"; readonly options: AnthropicUpstreamOptions };

/**
 * An upstream failed. `status` is the HTTP status to give the client (the upstream's own, or 502
 * when it could not be reached); `terminal` marks failures retrying cannot fix (a scripted plan that
 * ran out), which end the trajectory as `policy_error` at once.
 */
export class UpstreamError extends FlakegymError {
  override readonly name: string = "UpstreamError";
  constructor(
    message: string,
    readonly status: number,
    readonly opts: { terminal?: boolean; body?: string; cause?: unknown } = {},
  ) {
    super("E_UPSTREAM", message, opts.cause === undefined ? {} : { cause: opts.cause });
  }
  get terminal(): boolean {
    return this.opts.terminal === true;
  }
}
