import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/**
 * A POST over node:http(s) with keep-alive agents: the upstreams' transport. Cheaper per call than
 * fetch (no web streams), which matters at tens of concurrent streams per gateway. Sockets are
 * reused across calls (no connect per model call) and have Nagle's algorithm off (`noDelay`), so a
 * request is never held back waiting for an ACK. A request that met a reused socket the server had
 * just closed is sent once more on a fresh connection (resendOnFreshSocket).
 */

const agentOptions = {
  keepAlive: true,
  maxSockets: Number.POSITIVE_INFINITY,
  scheduling: "lifo",
  noDelay: true,
} as const;
const httpAgent = new HttpAgent(agentOptions);
const httpsAgent = new HttpsAgent(agentOptions);

export interface PostResponse {
  readonly status: number;
  readonly headers: IncomingMessage["headers"];
  readonly body: AsyncIterable<Buffer>;
  readonly ok: boolean;
  text(): Promise<string>;
}

/**
 * Whether a request that failed is sent once more, on a fresh connection: it went out on a reused
 * keep-alive socket, no answer came, and the socket was reset or hung up. A server closes an idle
 * keep-alive socket after its own timeout (Node's 5 s, uvicorn's 5 s): a request written as that
 * close crosses it never reached the server's handler. Pure.
 */
export function resendOnFreshSocket(reusedSocket: boolean, answered: boolean, err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return reusedSocket && !answered && (code === "ECONNRESET" || code === "EPIPE");
}

export function httpPost(
  url: string,
  headers: Record<string, string>,
  body: string | Uint8Array,
  signal: AbortSignal,
): Promise<PostResponse> {
  const payload = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return postOnce(new URL(url), headers, payload, signal, false);
}

function postOnce(
  u: URL,
  headers: Record<string, string>,
  payload: Uint8Array,
  signal: AbortSignal,
  fresh: boolean,
): Promise<PostResponse> {
  return new Promise((resolve, reject) => {
    const secure = u.protocol === "https:";
    let answered = false;
    const req = (secure ? httpsRequest : httpRequest)(
      u,
      {
        method: "POST",
        // a resend takes a connection of its own: the pool's other idle sockets may be as stale
        agent: fresh ? false : secure ? httpsAgent : httpAgent,
        headers: { ...headers, "content-length": String(payload.length) },
        signal,
      },
      (res) => {
        answered = true;
        resolve(responseOf(res));
      },
    );
    req.on("error", (err) => {
      if (!fresh && !signal.aborted && resendOnFreshSocket(req.reusedSocket, answered, err))
        resolve(postOnce(u, headers, payload, signal, true));
      else reject(err);
    });
    req.end(payload);
  });
}

function responseOf(res: IncomingMessage): PostResponse {
  const status = res.statusCode ?? 0;
  return {
    status,
    headers: res.headers,
    body: res,
    ok: status >= 200 && status < 300,
    text: async () => {
      let out = "";
      res.setEncoding("utf8");
      for await (const chunk of res) out += chunk;
      return out;
    },
  };
}
