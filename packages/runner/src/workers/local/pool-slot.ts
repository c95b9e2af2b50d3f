import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { FlakegymError } from "../../errors.js";
import { runHostCommand } from "../../gc/command-coprocess.js";
import { currentMountPoints, unmountRetry } from "../../gc/unmount.js";
import { type BoundedDirs, removeWorkerDir } from "../bounded-dirs.js";
import type { WorkerSpec } from "../types.js";

/**
 * Host dirs of a pooled worker that its sandbox binds at /workspace and /deps: each a shared mount
 * point, so a fork bound onto it from outside at assignment propagates into the running sandbox
 * (bwrap's mounts are slaves of the host's).
 */
export interface Slot {
  readonly workspace: string;
  readonly deps: string;
}

async function mountCmd(args: string[]): Promise<void> {
  // through the command coprocess: a spawn from the runner forks the runner (gc/command-coprocess.ts)
  const r = await runHostCommand(["mount", ...args], 30);
  if (r.exitCode !== 0)
    throw new FlakegymError(
      "E_POOL_MOUNT",
      `mount ${args.join(" ")}: ${r.output.trim() || `exit ${r.exitCode}`}`,
    );
}

/** Makes `dir` a shared mount point (a bind onto itself), so mounts on it reach sandboxes binding it. */
async function makeShared(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await mountCmd(["--bind", dir, dir]);
  await mountCmd(["--make-shared", dir]);
}

export async function makeSlot(workerDir: string): Promise<Slot> {
  const slot = { workspace: join(workerDir, "slot", "workspace"), deps: join(workerDir, "slot", "deps") };
  await makeShared(slot.workspace);
  await makeShared(slot.deps);
  return slot;
}

/** Binds the trajectory's fork (workspace, deps) onto the slot, from outside the running sandbox. */
export async function adoptFork(slot: Slot, spec: WorkerSpec): Promise<void> {
  await mountCmd(["--bind", spec.workspace, slot.workspace]);
  if (spec.depsDir) await mountCmd(["--bind", spec.depsDir, slot.deps]);
}

/**
 * Unmounts everything on the slot (the adopted fork, then the slot's own bind) before the worker
 * dir is removed: removing it with a fork still bound there would delete the agent's workspace. A
 * slot that stays mounted leaves the dir to `flakegym gc`.
 */
export async function releaseSlot(
  slot: Slot | undefined,
  workerDir: string,
  dirs?: BoundedDirs,
): Promise<void> {
  let clean = true;
  for (const p of slot ? [slot.deps, slot.workspace] : []) {
    for (let i = 0; i < 4; i++) {
      const r = await unmountRetry(p, { attempts: 2, delayMs: 100 });
      if (r.result === "not-mounted") break;
      if (r.result === "failed") {
        clean = false;
        break;
      }
    }
  }
  if (slot && (await currentMountPoints()).some((m) => m.startsWith(`${workerDir}/slot/`))) clean = false;
  if (clean) await removeWorkerDir(workerDir, dirs);
  else await dirs?.release();
}

/**
 * Whether a mount made on a shared host dir after a sandbox started reaches into it (root, mount
 * rights): undefined when it does, else why not (printed; workers then start cold).
 */
export async function probeMountPropagation(root: string): Promise<string | undefined> {
  if (process.getuid?.() !== 0) {
    return `pooled workers adopt a trajectory's workspace by mounting it into the running sandbox, which needs root (running as uid ${process.getuid?.()})`;
  }
  const dir = await mkdtemp(join(root, "pool-probe-"));
  const slot = join(dir, "slot");
  try {
    await makeShared(slot);
    await mountCmd(["-t", "tmpfs", "-o", "size=1m", "tmpfs", slot]);
    return undefined;
  } catch (err) {
    return `cannot make a shared mount point here: ${(err as Error).message}`;
  } finally {
    for (let i = 0; i < 3; i++) if ((await unmountRetry(slot, { attempts: 1 })).result !== "unmounted") break;
    if (!(await currentMountPoints()).some((m) => m.startsWith(dir)))
      await rm(dir, { recursive: true, force: true });
  }
}
