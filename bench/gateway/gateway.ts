/**
 * Child process of `npm run bench -- gateway`: the runner's process as a rollout has it — the
 * policy gateway started the way `flakegym rollout` starts it (rollout/wire.ts: in a thread of its
 * own since gateway/thread.ts exists, on the runner's event loop before; listening on a unix socket
 * and loopback TCP), with `routes` trajectories in front of the bench upstream, turn logs on, and
 * the runner's other work on its event loop: the Cline cores' streams to the runner (a partial
 * message per streamed token, the whole state at each call's start and end; see load.ts), received
 * on a loopback socket and parsed as the driver parses them.
 *   tsx bench/gateway/gateway.ts <runnerSrcDir> <upstreamBaseUrl> <routes> <turnLogDir> [loop]
 * `runnerSrcDir` is `packages/runner/src` of this checkout, or of an older revision extracted by the
 * bench (`--baseline <rev>`), so that two gateway versions can be measured side by side; `loop`
 * starts even a threaded revision's gateway on the runner's loop (`--arrangement loop`).
 *
 * Protocol (IPC): sends `{ ready: { routes: [{ url, token }], runner: { host, port }, arrangement } }`;
 * answers `{ stats: { calls, cpu, runnerLines } }` to `{ stats: true }` (calls: model calls received so
 * far; cpu: process.cpuUsage(), every thread; runnerLines: core stream messages parsed).
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

type ListenSpec = { host: string; port: number } | { socketPath: string };
interface Gateway {
  register(
    id: string,
    opts: { upstream: unknown; turnLogPath: string },
  ): { openaiBaseUrl: string | undefined; token: string; status(): { requests: number } };
}
interface GatewayModule {
  createPolicyGateway(opts: { listen: ListenSpec | ListenSpec[] }): Promise<Gateway>;
}
interface ThreadModule {
  startGatewayThread(opts: { listen: ListenSpec[] }): Promise<Gateway>;
}
interface UpstreamModule {
  OpenAiUpstream: new (opts: { baseUrl: string; model: string }) => unknown;
}

const [src, baseUrl, n, logDir, forceLoop] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string | undefined,
];
const load = async <T>(file: string) => (await import(pathToFileURL(join(src, file)).href)) as T;
const { OpenAiUpstream } = await load<UpstreamModule>("policy/openai-upstream.ts");

await mkdir(logDir, { recursive: true });
const listen: ListenSpec[] = [{ socketPath: join(logDir, "gateway.sock") }, { host: "127.0.0.1", port: 0 }];
const threaded = forceLoop !== "loop" && existsSync(join(src, "gateway", "thread.ts"));
const gw = threaded
  ? await (await load<ThreadModule>("gateway/thread.ts")).startGatewayThread({ listen })
  : await (await load<GatewayModule>("gateway/server.ts")).createPolicyGateway({ listen });
const upstream = new OpenAiUpstream({ baseUrl, model: "bench-model" });
const routes = Array.from({ length: Number(n) }, (_, i) =>
  gw.register(`bench-${i}`, { upstream, turnLogPath: join(logDir, `bench-${i}`, "turns.jsonl") }),
);

// the runner's other work: each core's stream of messages, one JSON document a line
let runnerLines = 0;
const runner = createServer({ noDelay: true }, (socket) => {
  let tail = "";
  socket.setEncoding("utf8");
  socket.on("data", (s: string) => {
    tail += s;
    let nl = tail.indexOf("\n");
    while (nl >= 0) {
      JSON.parse(tail.slice(0, nl));
      runnerLines++;
      tail = tail.slice(nl + 1);
      nl = tail.indexOf("\n");
    }
  });
  socket.on("error", () => undefined);
});
await new Promise<void>((resolve) => runner.listen(0, "127.0.0.1", resolve));
const runnerPort = (runner.address() as AddressInfo).port;

process.on("message", (m: { stats?: boolean }) => {
  if (!m.stats) return;
  const calls = routes.reduce((sum, r) => sum + r.status().requests, 0);
  process.send!({ stats: { calls, cpu: process.cpuUsage(), runnerLines } });
});
// exit normally when the bench goes away, so that --cpu-prof can write its profile
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
process.send!({
  ready: {
    routes: routes.map((r) => ({ url: r.openaiBaseUrl!, token: r.token })),
    runner: { host: "127.0.0.1", port: runnerPort },
    arrangement: threaded ? "thread" : "loop",
  },
});
