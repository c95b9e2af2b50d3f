import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/**
 * A POST over node:http(s) with keep-alive agents: the upstreams' transport. Cheaper per call than
 * fetch (no web streams), which matters at tens of concurrent streams per gateway. Sockets are
 * reused across calls (no connect per model call) and have Nagle's algorithm off (`noDelay`), so a
 * request is never held back waiting for an ACK.
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

export function httpPost(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<PostResponse> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const secure = u.protocol === "https:";
    const payload = Buffer.from(body, "utf8");
    const req = (secure ? httpsRequest : httpRequest)(
      u,
      {
        method: "POST",
        agent: secure ? httpsAgent : httpAgent,
        headers: { ...headers, "content-length": String(payload.length) },
        signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        resolve({
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
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
