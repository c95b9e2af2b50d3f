import { readFile } from "node:fs/promises";
import { CORE_GC_SIGNAL, type CoreGcMarker, lastCoreGcMarker } from "@flakegym/cline-vendor";
import { createDeadline } from "@flakegym/nomad-jobs";

/**
 * A reused worker's core collects its garbage before the next trajectory (issue 47): the reset
 * sends the core the signal of cline-vendor's core-gc.cjs and waits, bounded, for the marker line
 * the core writes to its log. Without it each task's garbage stays in a heap V8 grows rather than
 * collects (≈ 30 MiB a trajectory), and the memory rule retires the worker after 3–4 tasks.
 */

/** How long a reset waits for the core's collection (≈ 0.15 CPU-s on an idle core). */
export const CORE_GC_WAIT_MS = 10_000;

/**
 * Whether a command line (/proc/<pid>/cmdline split on NUL) is cline-core's own Node process: it
 * runs the core's bundle as its script, unlike the supervisor (whose arguments name the bundle
 * after `--core-js`) and the wrappers around bubblewrap (which carry the supervisor's). Pure.
 */
export function isCoreArgv(argv: readonly string[]): boolean {
  const script = argv.findIndex((a) => a.endsWith("/cline-core.js"));
  if (script < 1) return false;
  return !argv.some((a) => a.endsWith("/cline-supervisor.mjs")) && argv[script - 1] !== "--core-js";
}

/** The kept pid that runs cline-core itself; undefined when none does (the core died). */
export async function corePidAmong(kept: readonly number[]): Promise<number | undefined> {
  for (const pid of kept) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (isCoreArgv(cmd.split("\0").filter((a) => a !== ""))) return pid;
  }
  return undefined;
}

export type CoreGcResult =
  | { readonly done: true; readonly marker: CoreGcMarker }
  | { readonly done: false; readonly why: string };

/**
 * Asks the core `pid` for a full GC and waits for its marker in `logFile` (emptied before, so any
 * marker there is this one's), at most `ms`. Never throws: a core that does not answer is reported.
 */
export async function collectCoreGarbage(
  pid: number,
  logFile: string,
  o: { readonly ms?: number; readonly signal?: AbortSignal } = {},
): Promise<CoreGcResult> {
  const ms = o.ms ?? CORE_GC_WAIT_MS;
  try {
    process.kill(pid, CORE_GC_SIGNAL);
  } catch (err) {
    return { done: false, why: `could not signal the core (pid ${pid}): ${(err as Error).message}` };
  }
  using deadline = createDeadline({
    signals: [o.signal],
    timeout: { limit: "the core's garbage collection (CORE_GC_WAIT_MS)", ms },
  });
  for (;;) {
    const marker = lastCoreGcMarker(await readFile(logFile, "utf8").catch(() => ""));
    if (marker) return { done: true, marker };
    if (deadline.signal.aborted)
      return {
        done: false,
        why: `no collection marker in ${logFile} within ${ms} ms (core-gc.cjs not loaded?)`,
      };
    await new Promise((r) => setTimeout(r, 25));
  }
}
