/**
 * Child process of `npm run bench -- scale`: an idle Node process measuring its own event-loop
 * delay while a point runs. It does nothing else, so its delay is the machine's scheduling latency
 * (a shared, overloaded machine delays every process's timers); the runner's loop delay above it
 * is the runner's own.
 *
 * Protocol (IPC): sends `{ ready: {} }`; `{ reset: true }` starts a measurement, answered
 * `{ reset: true }`; `{ p99: true }` is answered `{ p99: <ms> }`.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";

let h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
process.on("message", (m: { reset?: boolean; p99?: boolean }) => {
  if (m.reset) {
    h.disable();
    h = monitorEventLoopDelay({ resolution: 10 });
    h.enable();
    process.send?.({ reset: true });
  }
  if (m.p99) process.send?.({ p99: h.percentile(99) / 1e6 });
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: {} });
