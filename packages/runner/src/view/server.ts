import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createDeadline } from "@flakegym/nomad-jobs";
import { z } from "zod";
import type { ChatTokenizer } from "../export/tokenizer.js";
import { pageHtml, webAssets } from "./bundle.js";
import { CompareKind } from "./compare.js";
import { guardRequest } from "./guard.js";
import { RowQuery } from "./query-schema.js";
import { EvalFileName } from "./responses.js";
import { createViewStore, type ViewStore } from "./run-data.js";
import { openSafeRoot, ViewPathError } from "./safe-read.js";

/**
 * `flakegym view`'s HTTP server: 127.0.0.1 only, a random port (unless given) and a random token
 * that every request must carry (`?t=`, or the `x-flakegym-token` header the app sends). Read-only:
 * GET and HEAD only. Every request passes {@link guardRequest} first.
 */
export interface ViewServer {
  readonly url: string;
  readonly port: number;
  readonly token: string;
  close(): Promise<void>;
}

export interface ViewServerOptions {
  readonly dir: string;
  readonly port?: number;
  readonly tokenizer?: ChatTokenizer;
  /** Stops background reads when the viewer stops. */
  readonly signal?: AbortSignal;
  /** Fixed token (tests); default 24 random bytes. */
  readonly token?: string;
}

const PAGE_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-src 'self'; base-uri 'none'; form-action 'none'";
/** An eval's report.html runs in a sandboxed frame that cannot reach anything. */
const REPORT_CSP =
  "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

const RefParam = z.string().max(1000).default("");
const IdParam = z.string().min(1).max(200);
/** The transcript search in flight (one at a time) and the viewer's own stop signal. */
interface SearchState {
  current?: AbortController;
  readonly stop: AbortSignal | undefined;
}
const SearchText = z.string().min(2).max(200);
/** A transcript search ends after this long with what it found ("stopped": "time limit"). */
const SEARCH_MS = 15_000;
const CompareQuery = z.object({
  kind: CompareKind,
  a: RefParam,
  b: RefParam,
  page: z.coerce.number().int().min(0).default(0),
  size: z.coerce.number().int().min(1).max(500).default(100),
});

export async function startViewServer(opts: ViewServerOptions): Promise<ViewServer> {
  const root = await openSafeRoot(opts.dir);
  const store = createViewStore(root, {
    ...(opts.tokenizer ? { tokenizer: opts.tokenizer } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const token = opts.token ?? randomBytes(24).toString("base64url");
  await webAssets(); // bundle before the URL is printed, so the first page load does not wait for it
  const server = createServer();
  let port = 0;
  const search: SearchState = { stop: opts.signal };
  server.on("request", (req, res) => {
    handle(req, res, store, port, token, search).catch((e) => sendError(res, e));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  void store.warm(); // while the browser starts: the first page then finds the run's rows read
  return {
    url: `http://127.0.0.1:${port}/?t=${token}`,
    port,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        search.current?.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  extra: Record<string, string> = {},
) {
  res.writeHead(status, {
    "content-type": type,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "content-length": Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

const sendJson = (res: ServerResponse, status: number, value: unknown) =>
  send(res, status, "application/json; charset=utf-8", JSON.stringify(value));

function sendError(res: ServerResponse, e: unknown) {
  if (res.headersSent) return void res.destroy();
  if (e instanceof ViewPathError) return sendJson(res, e.status, { error: e.message });
  if (e instanceof z.ZodError)
    return sendJson(res, 400, {
      error: `query parameter '${e.issues[0]?.path.join(".")}': ${e.issues[0]?.message}`,
    });
  sendJson(res, 500, { error: e instanceof Error ? e.message : String(e) });
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  store: ViewStore,
  port: number,
  token: string,
  search: SearchState,
) {
  const verdict = guardRequest(
    {
      host: req.headers.host,
      url: req.url,
      tokenHeader:
        typeof req.headers["x-flakegym-token"] === "string" ? req.headers["x-flakegym-token"] : undefined,
    },
    port,
    token,
  );
  if (!verdict.ok) return send(res, verdict.status, "text/plain; charset=utf-8", `${verdict.reason}\n`);
  if (req.method !== "GET" && req.method !== "HEAD")
    return send(res, 405, "text/plain; charset=utf-8", "read-only: GET only\n", { allow: "GET, HEAD" });
  const q = verdict.query;
  const ref = () => RefParam.parse(q.get("run") ?? q.get("ref") ?? undefined);
  const id = () => IdParam.parse(q.get("id"));
  switch (verdict.path) {
    case "/": {
      const assets = await webAssets();
      return send(res, 200, "text/html; charset=utf-8", pageHtml(assets, { mode: "server" }, PAGE_CSP), {
        "content-security-policy": `${PAGE_CSP}; frame-ancestors 'none'`,
      });
    }
    case "/api/index":
      return sendJson(res, 200, await store.index());
    case "/api/run": {
      const query = RowQuery.parse(
        Object.fromEntries([...q].filter(([k, v]) => k in RowQuery.shape && v !== "")),
      );
      return sendJson(res, 200, await store.run(ref(), query));
    }
    case "/api/stamp":
      return sendJson(res, 200, { stamp: await store.stamp(ref()) });
    case "/api/trajectory":
      return sendJson(res, 200, await store.trajectory(ref(), id()));
    case "/api/tokens":
      return sendJson(res, 200, await store.tokens(ref(), id()));
    case "/api/search": {
      const text = SearchText.parse(q.get("q") ?? undefined);
      // one search at a time: a newer query (typing on) cancels the one before; so does a closed request
      search.current?.abort();
      const mine = new AbortController();
      search.current = mine;
      req.once("close", () => mine.abort());
      using deadline = createDeadline({
        signals: [mine.signal, search.stop],
        timeout: { limit: "transcript search time", ms: SEARCH_MS },
      });
      const found = await store.search(ref(), text, deadline.signal, () => deadline.expired);
      if (search.current === mine) search.current = undefined;
      return sendJson(res, 200, found);
    }
    case "/api/compare": {
      const c = CompareQuery.parse(Object.fromEntries(q));
      return sendJson(res, 200, await store.compare(c.kind, c.a, c.b, c.page, c.size));
    }
    case "/api/eval-file":
      return sendJson(res, 200, await store.evalFile(ref(), EvalFileName.parse(q.get("name"))));
    case "/eval":
      return send(res, 200, "text/html; charset=utf-8", await store.evalHtml(ref()), {
        "content-security-policy": REPORT_CSP,
      });
    default:
      return send(res, 404, "text/plain; charset=utf-8", "not found\n");
  }
}
