/**
 * Child process of `npm run bench -- scale`: the cluster side, kept out of the runner's process so
 * that the runner's CPU and memory are its own. The project's Nomad double (a real HTTP server
 * following Nomad's API) places every allocation; each allocation's task is a SIMULATED worker
 * (sim-core.ts) served in this process on the allocation's dynamic port.
 *
 * Protocol (IPC): argv `<json SimCoreOptions>`; sends `{ ready: { nomadUrl } }`; answers
 * `{ stats: true }` with `{ stats: { sim, hold, loopP99Ms, loopMaxMs, nomadRequests, nomadByRoute, cpuMs, rssMb } }`.
 */

import { monitorEventLoopDelay } from "node:perf_hooks";
import { GRPC_PORT_LABEL, META } from "@flakegym/nomad-jobs";
import { startNomadDouble } from "@flakegym/test-utils";
import { AgentHold } from "./hold.js";
import { SimCore, type SimCoreOptions, type SimStats } from "./sim-core.js";

const options = JSON.parse(process.argv[2] ?? "{}") as SimCoreOptions;
const sim: SimStats = { modelCalls: 0, modelFailures: 0, failureReasons: {}, grpcCalls: 0, diffs: 0 };
const hold = new AgentHold(options.hold.expected, options.hold.timeoutMs, options.hold.spreadMs);
// the harness's own event loop: a late cluster answers every core and the Nomad API late
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

/** The core token the dispatch carried (Nomad exposes dispatch meta as NOMAD_META_<key>). */
function tokenOf(env: Readonly<Record<string, string>>): string | undefined {
  return env[`NOMAD_META_${META.coreToken}`] ?? env[`NOMAD_META_${META.coreToken.toUpperCase()}`];
}

const double = await startNomadDouble({
  // Nomad's own heartbeat on the event stream (the double's default is 100 ms, for fast tests)
  heartbeatMs: 10_000,
  runTask(info) {
    const token = tokenOf(info.env);
    if (!token || !info.ports.some((p) => p.Label === GRPC_PORT_LABEL)) return undefined;
    const core = new SimCore(token, options, sim, hold);
    return { kind: "listen", onStream: (s, h) => core.onStream(s, h), onKill: () => core.kill() };
  },
});

/** Nomad API calls by route shape (ids replaced), for the per-trajectory breakdown. */
function byRoute(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of double.requests) {
    const path = r.path
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, ":id")
      .replace(/\/job\/.+?(\/(allocations|evaluations|dispatch))?$/, "/job/:job$1");
    const route = `${r.method} ${path}`;
    out[route] = (out[route] ?? 0) + 1;
  }
  return out;
}

process.on("message", (m: { stats?: boolean }) => {
  if (!m.stats) return;
  const cpu = process.cpuUsage();
  process.send?.({
    stats: {
      sim,
      hold: hold.stats,
      loopP99Ms: loop.percentile(99) / 1e6,
      loopMaxMs: loop.max / 1e6,
      nomadRequests: double.requests.length,
      nomadByRoute: byRoute(),
      cpuMs: (cpu.user + cpu.system) / 1000,
      rssMb: process.memoryUsage().rss / 1048576,
    },
  });
});
process.on("disconnect", () => {
  void double.close().finally(() => process.exit(0));
});
process.send?.({ ready: { nomadUrl: double.url } });
