/**
 * Child process for `npm run bench -- gateway`: runs either the upstream (an OpenAI-compatible
 * inference server double) or the policy gateway in front of it, so that the client, the gateway
 * and the upstream each have their own event loop. Prints one JSON line with its URLs on stdout.
 *   tsx bench/gateway/servers.ts upstream <chunks> <chunkChars> <intervalMs>
 *   tsx bench/gateway/servers.ts gateway <upstreamBaseUrl> <trajectories> <turnLogDir>
 */
import { join } from "node:path";
import { createPolicyGateway, OpenAiUpstream, startInferenceServerDouble } from "@flakegym/runner";

const [role, ...args] = process.argv.slice(2);
let report = () => "";
// exit normally on SIGTERM so --cpu-prof can write its profile; report CPU per call on stderr
process.on("SIGTERM", () => {
  const line = report();
  if (line) process.stderr.write(`${line}\n`);
  process.exit(0);
});
if (role === "upstream") {
  const chunks = Number(args[0] ?? 20);
  const chunkChars = Number(args[1] ?? 8);
  const intervalMs = Number(args[2] ?? 0);
  const text = "x".repeat(chunks * chunkChars);
  const double = await startInferenceServerDouble({ reply: () => ({ text }), chunk: chunkChars, intervalMs });
  console.log(JSON.stringify({ baseUrl: double.baseUrl }));
} else if (role === "gateway") {
  const [baseUrl, n, logDir] = args as [string, string, string];
  const gw = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } });
  const upstream = new OpenAiUpstream({ baseUrl, model: "bench" });
  const routes = Array.from({ length: Number(n) }, (_, i) =>
    gw.register(`bench-${i}`, { upstream, turnLogPath: join(logDir, `bench-${i}`, "turns.jsonl") }),
  );
  const cpu0 = process.cpuUsage();
  report = () => {
    const calls = routes.reduce((n, r) => n + r.status().requests, 0);
    const { user, system } = process.cpuUsage(cpu0);
    return `gateway: ${calls} calls, ${((user + system) / 1000 / Math.max(1, calls)).toFixed(3)} ms CPU per call (user ${(user / 1000 / Math.max(1, calls)).toFixed(3)}, system ${(system / 1000 / Math.max(1, calls)).toFixed(3)})`;
  };
  console.log(JSON.stringify({ routes: routes.map((r) => ({ url: r.openaiBaseUrl, token: r.token })) }));
} else {
  console.error(`servers.ts: unknown role '${role}'`);
  process.exit(2);
}
