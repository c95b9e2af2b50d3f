import { createDeadline } from "@flakegym/nomad-jobs";
import type { Worker, WorkerExit } from "./types.js";

/** The worker's exit if it comes within `ms` (bounded; a worker without `exited` never says). */
export async function exitWithin(
  worker: Pick<Worker, "exited">,
  ms: number,
  limit = "the worker's exit grace",
): Promise<WorkerExit | undefined> {
  if (!worker.exited || ms <= 0) return undefined;
  using deadline = createDeadline({ timeout: { limit, ms } });
  const timedOut = new Promise<undefined>((r) =>
    deadline.signal.addEventListener("abort", () => r(undefined), { once: true }),
  );
  return await Promise.race([worker.exited, timedOut]);
}
