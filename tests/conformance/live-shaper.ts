import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { type LiveMember, memberOfSeed, shapeOf } from "./live-script.js";

/**
 * The model server the live Cline rollout talks to (through flakegym's gateway): a loopback HTTP
 * front of vLLM that applies each member's script (live-script.ts) to its chat calls — refuse it,
 * or add sampling members (a regex, token counts) — and forwards everything else unchanged. vLLM
 * samples every token; its answer (ids, logprobs, usage) streams back untouched.
 */
export interface Shaper {
  readonly baseUrl: string;
  /** Chat calls seen per member, in order: `sample` or the refusal status. */
  readonly calls: Partial<Record<LiveMember, string[]>>;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => resolve(Buffer.concat(parts)));
    req.on("error", reject);
  });

/** Sends `body` to vLLM at `target` (its /v1 URL) as `req` asked, piping the answer back to `res`. */
function forward(target: URL, req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const path = `${target.pathname.replace(/\/v1\/?$/, "")}${req.url ?? "/"}`;
  const headers = { ...req.headers, host: target.host, "content-length": String(body.length) };
  const up = httpRequest(
    { host: target.hostname, port: target.port, path, method: req.method, headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  up.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `conformance server: vLLM unreachable: ${err.message}` } }));
  });
  req.on("close", () => {
    if (!res.writableFinished) up.destroy();
  });
  up.end(body);
}

/** Starts the front of vLLM (`vllmBaseUrl`, its /v1 URL) on a loopback port. */
export async function startShaper(vllmBaseUrl: string): Promise<Shaper> {
  const target = new URL(vllmBaseUrl);
  const calls: Shaper["calls"] = {};
  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions"))
        return forward(target, req, res, raw);
      const body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
      const member = memberOfSeed(body["seed"]);
      const seen: string[] = [];
      if (member) calls[member] ??= seen;
      const log = member ? calls[member]! : seen;
      const shape = shapeOf(member, log.length + 1);
      if (shape.kind === "refuse") {
        log.push(String(shape.status));
        res.writeHead(shape.status, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ error: { message: shape.message, type: "BadRequestError", code: shape.status } }),
        );
        return;
      }
      log.push("sample");
      forward(target, req, res, Buffer.from(JSON.stringify({ ...body, ...shape.body })));
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `conformance server: ${(err as Error).message}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
