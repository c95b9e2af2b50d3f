/**
 * Child process of `npm run bench -- gateway`: one policy gateway (its own process, as the runner is
 * in production) with `routes` trajectories in front of the bench upstream, turn logs on.
 *   tsx bench/gateway/gateway.ts <runnerSrcDir> <upstreamBaseUrl> <routes> <turnLogDir>
 * `runnerSrcDir` is `packages/runner/src` of this checkout, or of an older revision extracted by the
 * bench (`--baseline <rev>`), so that two gateway versions can be measured side by side.
 *
 * Protocol (IPC): sends `{ ready: { routes: [{ url, token }] } }`; answers `{ stats: { calls, cpu } }`
 * to `{ stats: true }` (calls: model calls received so far; cpu: process.cpuUsage()).
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";

interface GatewayModule {
  createPolicyGateway(opts: { listen: { host: string; port: number } }): Promise<{
    register(
      id: string,
      opts: { upstream: unknown; turnLogPath: string },
    ): { openaiBaseUrl: string | undefined; token: string; status(): { requests: number } };
  }>;
}
interface UpstreamModule {
  OpenAiUpstream: new (opts: { baseUrl: string; model: string }) => unknown;
}

const [src, baseUrl, n, logDir] = process.argv.slice(2) as [string, string, string, string];
const { createPolicyGateway } = (await import(
  pathToFileURL(join(src, "gateway", "server.ts")).href
)) as GatewayModule;
const { OpenAiUpstream } = (await import(
  pathToFileURL(join(src, "policy", "openai-upstream.ts")).href
)) as UpstreamModule;

const gw = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } });
const upstream = new OpenAiUpstream({ baseUrl, model: "bench-model" });
const routes = Array.from({ length: Number(n) }, (_, i) =>
  gw.register(`bench-${i}`, { upstream, turnLogPath: join(logDir, `bench-${i}`, "turns.jsonl") }),
);
process.on("message", (m: { stats?: boolean }) => {
  if (!m.stats) return;
  const calls = routes.reduce((sum, r) => sum + r.status().requests, 0);
  process.send!({ stats: { calls, cpu: process.cpuUsage() } });
});
// exit normally when the bench goes away, so that --cpu-prof can write its profile
process.on("disconnect", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
process.send!({ ready: { routes: routes.map((r) => ({ url: r.openaiBaseUrl!, token: r.token })) } });
