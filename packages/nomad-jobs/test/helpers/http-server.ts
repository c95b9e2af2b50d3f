import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the test server saw it. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

export type Handler = (req: SeenRequest, res: ServerResponse, n: number) => void | Promise<void>;

/**
 * A real HTTP server on loopback port 0 whose answers a test scripts. Records every request.
 * `handle(req, res, n)` gets the 1-based number of the request.
 */
export async function scriptedServer(handle: Handler) {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const u = new URL(req.url ?? "/", "http://x");
      const r: SeenRequest = {
        method: req.method ?? "",
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      seen.push(r);
      Promise.resolve(handle(r, res, seen.length)).catch((err: unknown) => {
        res.statusCode = 599;
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers JSON with Nomad's query-meta headers. */
export function json(res: ServerResponse, status: number, body: unknown, index = 7): void {
  res.writeHead(status, {
    "Content-Type": "application/json",
    "X-Nomad-Index": String(index),
    "X-Nomad-KnownLeader": "true",
    "X-Nomad-LastContact": "0",
  });
  res.end(JSON.stringify(body));
}

export function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "Content-Type": "text/plain" });
  res.end(body);
}

/** A free loopback port nobody listens on (for connection-refused tests). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
