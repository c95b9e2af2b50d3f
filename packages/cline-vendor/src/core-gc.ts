import { fileURLToPath } from "node:url";

/**
 * A full garbage collection of a running Cline core, on request (issue 47). A core that serves
 * task after task keeps each task's garbage: V8 grows the old generation rather than collect it
 * while it is below its limit (≈ 30 MiB a trajectory, measured), so a reused worker looks as if it
 * leaked and is retired. The core is started with `--require core-gc.cjs` (supervisor/core-gc.cjs);
 * a reset sends it {@link CORE_GC_SIGNAL} and reads the marker line the core then writes to its log.
 */

/** The preload: on {@link CORE_GC_SIGNAL}, `gc()` and one marker line on stderr. */
export const CORE_GC_PRELOAD_PATH = fileURLToPath(new URL("../supervisor/core-gc.cjs", import.meta.url));
/** Ignored by default: a core started without the preload is unharmed by it. */
export const CORE_GC_SIGNAL = "SIGURG";
/** The core's Node flags that load the preload (the supervisor's `--core-node-arg`s). */
export const CORE_GC_NODE_ARGS: readonly string[] = ["--require", CORE_GC_PRELOAD_PATH];

/** One collection as the core's marker line reports it. */
export interface CoreGcMarker {
  /** How many collections the core has done on request, this one included. */
  readonly seq: number;
  /** The heap in use after it, MiB. */
  readonly heapUsedMib: number;
  /** The core's CPU for it, ms. */
  readonly cpuMs: number;
}

const MARKER = /^flakegym-core-gc (\d+) heap-used-mib (\d+(?:\.\d+)?) cpu-ms (\d+)$/;

/** The last marker line in a core's log text; undefined when there is none. Pure. */
export function lastCoreGcMarker(log: string): CoreGcMarker | undefined {
  let last: CoreGcMarker | undefined;
  for (const line of log.split("\n")) {
    const m = MARKER.exec(line.trim());
    if (m) last = { seq: Number(m[1]), heapUsedMib: Number(m[2]), cpuMs: Number(m[3]) };
  }
  return last;
}
