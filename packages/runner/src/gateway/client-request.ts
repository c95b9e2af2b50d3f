import type { IncomingMessage } from "node:http";
import { HttpError } from "../errors.js";
import { anthropicToChatRequest } from "../policy/anthropic-convert.js";
import { ChatRequest } from "../policy/chat.js";
import type { ClientProtocol, UpstreamCall } from "../policy/upstream.js";

/** A client's request body, parsed and checked. */
export interface ClientRequest {
  /** The body as the client sent it, parsed. */
  readonly raw: Record<string, unknown>;
  /** The request in canonical (OpenAI chat) form. */
  readonly request: ChatRequest;
  /** The client's bytes, when they are the canonical form already (OpenAI protocol): logged as they are. */
  readonly requestJson?: Buffer;
}

/** Parses and checks a model call's body; throws {@link HttpError} (400) naming what is wrong. */
export function parseClientRequest(protocol: ClientProtocol, body: Buffer): ClientRequest {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new HttpError(400, "E_GATEWAY_REQUEST", `request body is not JSON: ${(err as Error).message}`, {
      type: "invalid_request_error",
    });
  }
  if (protocol === "anthropic") return { raw, request: anthropicToChatRequest(raw) };
  const parsed = ChatRequest.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new HttpError(400, "E_GATEWAY_REQUEST", `request field ${i.path.join(".")}: ${i.message}`, {
      type: "invalid_request_error",
    });
  }
  return { raw, request: parsed.data, requestJson: body };
}

/**
 * Whether a call may reach its upstream before its body is parsed: an OpenAI-protocol call to an
 * upstream that forwards the client's bytes (`forwardsClientJson`). The gateway then starts the
 * upstream request first and parses and checks the body while it travels; a body that fails the
 * check aborts the call before the upstream answers, and the client gets the same 400 as before.
 */
export function parsesAfterForwarding(
  protocol: ClientProtocol,
  forwardsClientJson: boolean | undefined,
): boolean {
  return protocol === "openai" && forwardsClientJson === true;
}

/**
 * The call handed to an upstream. With `parse` deferred, `request` and `raw` are parsed on first
 * read (an upstream that forwards the client's bytes reads neither unless the bytes are not one JSON
 * object), and a body that does not parse throws its {@link HttpError} from that read.
 */
export function upstreamCall(
  base: Omit<UpstreamCall, "request" | "raw">,
  parsed: () => ClientRequest,
): UpstreamCall {
  return {
    ...base,
    get request() {
      return parsed().request;
    },
    get raw() {
      return parsed().raw;
    },
  };
}

/**
 * The request body, whole. Plain listeners, not an async iterator: a body over the limit is refused
 * (413) while the rest of it flows on unread, so the answer reaches the client; an iterator's early
 * exit destroyed the request, and the answer with it.
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: Error | undefined) => {
      req.off("data", onData).off("end", onEnd).off("error", settle).off("close", onClose);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) chunks.push(chunk);
      else
        settle(
          new HttpError(413, "E_TOO_LARGE", `request body larger than ${max} bytes`, {
            type: "invalid_request_error",
          }),
        );
    };
    const onEnd = () => settle(undefined);
    const onClose = () => settle(new Error("the client closed the connection before its request body ended"));
    req.on("data", onData).on("end", onEnd).on("error", settle).on("close", onClose);
  });
}
