/**
 * Child process of `npm run bench -- gateway --passthrough` (and the cost bench): the baseline of
 * the gateway's CPU per call — a minimal pass-through proxy in plain node:http. Per trajectory a
 * route `/r/<i>/v1/…` with a bearer token (the least a proxy in front of shared model servers
 * must check); the request body is piped to the upstream unread and the answer piped back unread.
 * No parsing, no token facts, no turn log, no redaction, no limits: what the gateway does beyond
 * this is what the ratio measures.
 *   tsx bench/gateway/passthrough.ts <upstreamBaseUrl> <routes>
 *
 * Protocol (IPC), as bench/gateway/gateway.ts: sends `{ ready: { routes, runner, arrangement } }`;
 * answers `{ stats: { calls, cpu, runnerLines } }` to `{ stats: true }`. The runner socket only
 * drains what it is sent (run the bench with `--core-streams off` to compare CPU).
 */
import { randomBytes } from "node:crypto";
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createNetServer } from "node:net";

const [baseUrl, n] = process.argv.slice(2) as [string, string];
const upstream = new URL(baseUrl);
const tokens = Array.from({ length: Number(n) }, () => randomBytes(16).toString("hex"));
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
let calls = 0;

const ROUTE = /^\/r\/(\d+)\/v1\/(.*)$/;
const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
  const m = ROUTE.exec(req.url ?? "");
  const token = m ? tokens[Number(m[1])] : undefined;
  if (!m || token === undefined || req.headers.authorization !== `Bearer ${token}`) {
    res.writeHead(404).end('{"error":{"message":"no such route"}}');
    return;
  }
  calls++;
  const up = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      path: `${upstream.pathname}/${m[2]}`,
      method: req.method,
      agent,
      headers: { "content-type": req.headers["content-type"] ?? "application/json" },
    },
    (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    },
  );
  up.setNoDelay(true);
  up.on("error", (err) => res.destroy(err));
  req.pipe(up);
});
server.listen(0, "127.0.0.1");
await new Promise((r) => server.once("listening", r));
const { port } = server.address() as AddressInfo;

let runnerLines = 0;
const runner = createNetServer((s) => {
  s.on("data", () => runnerLines++);
  s.on("error", () => undefined);
});
await new Promise<void>((r) => runner.listen(0, "127.0.0.1", r));

process.on("message", (msg: { stats?: boolean }) => {
  if (msg.stats) process.send!({ stats: { calls, cpu: process.cpuUsage(), runnerLines } });
});
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
process.send!({
  ready: {
    routes: tokens.map((token, i) => ({ url: `http://127.0.0.1:${port}/r/${i}/v1`, token })),
    runner: { host: "127.0.0.1", port: (runner.address() as AddressInfo).port },
    arrangement: "pass-through",
  },
});
