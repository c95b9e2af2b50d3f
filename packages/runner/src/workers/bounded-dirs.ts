import { mkdir, rm, statfs } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { type UnmountRecord, unmountRetry } from "../gc/unmount.js";
import type { WorkerSpec } from "./types.js";

/**
 * A worker's own writable state on the host — HOME, /tmp, the Cline config dir (it holds the
 * gateway token) and the socket dir — kept in ONE size-limited tmpfs per worker (`<worker dir>/w`)
 * when this process may mount (root), so the agent meets ENOSPC at the bound. Without mount
 * rights the dirs are plain and the worker's watchdog measures them instead.
 */
export interface BoundedDirs {
  /** The tmpfs mount point (or plain dir). */
  readonly root: string;
  readonly home: string;
  readonly tmp: string;
  readonly config: string;
  readonly sock: string;
  /** Whether `root` is a size-limited tmpfs (else: measured by the watchdog). */
  readonly bounded: boolean;
  readonly sizeMb: number;
  /** Unmounts the tmpfs (retried, lazily when busy). */
  release(): Promise<UnmountRecord | undefined>;
}

/** Makes `<workerDir>/w` (a `sizeMb` tmpfs when possible) with home, tmp, config and sock in it. */
export async function makeBoundedDirs(workerDir: string, sizeMb: number): Promise<BoundedDirs> {
  const root = join(workerDir, "w");
  await mkdir(root, { recursive: true });
  const m = await execa("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,mode=0755`, "tmpfs", root], {
    reject: false,
    timeout: 30_000,
    stdin: "ignore",
  });
  const bounded = m.exitCode === 0;
  const dirs = {
    home: join(root, "home"),
    tmp: join(root, "tmp"),
    config: join(root, "config"),
    sock: join(root, "sock"),
  };
  for (const d of Object.values(dirs)) await mkdir(d, { recursive: true });
  let released = false;
  return {
    root,
    ...dirs,
    bounded,
    sizeMb,
    async release() {
      if (!bounded || released) return undefined;
      released = true;
      return await unmountRetry(root);
    },
  };
}

/**
 * Removes a worker's directory (its config dir holds the gateway token) once its tmpfs is
 * unmounted; a tmpfs that cannot be unmounted is left, with its directory, to `flakegym gc`.
 */
export async function removeWorkerDir(dir: string, dirs: BoundedDirs | undefined): Promise<void> {
  const r = await dirs?.release();
  if (r?.result === "failed") return;
  await rm(dir, { recursive: true, force: true });
}

/** MiB used under `dir` (one filesystem), or undefined when `du` fails. */
export async function dirSizeMb(dir: string): Promise<number | undefined> {
  const r = await execa("du", ["-sm", "-x", dir], { reject: false, timeout: 30_000, stdin: "ignore" });
  const n = Number(r.stdout.split(/\s/)[0]);
  return Number.isFinite(n) && r.stdout ? n : undefined;
}

/**
 * Whether the filesystem of `dir` itself bounds writes to about `mb` (an overlay fork whose upper
 * layer is a size-limited tmpfs reports that tmpfs's size).
 */
export async function fsEnforcesQuota(dir: string, mb: number): Promise<boolean> {
  try {
    const s = await statfs(dir);
    return s.blocks * s.bsize <= mb * 1024 * 1024 * 1.05;
  } catch {
    return false;
  }
}

/** Whether a bounded filesystem is (nearly) full: less than 1% or 256 KiB left. */
export async function filesystemFull(dir: string): Promise<boolean> {
  try {
    const s = await statfs(dir);
    const size = s.blocks * s.bsize;
    return s.bavail * s.bsize < Math.max(256 * 1024, size * 0.01);
  } catch {
    return false;
  }
}

/**
 * What the filesystems cannot bound, measured by a worker's watchdog (every backend): the
 * workspace without an fs quota against `diskMb`, the state dirs without a tmpfs against their
 * size, or their tmpfs full. A reason to end the worker with, or undefined.
 */
export async function unboundedDiskOver(
  spec: WorkerSpec,
  quotaByFs: boolean,
  dirs: BoundedDirs,
): Promise<string | undefined> {
  if (spec.limits.diskMb !== undefined && !quotaByFs) {
    const mb = await dirSizeMb(spec.workspace);
    if (mb !== undefined && mb > spec.limits.diskMb)
      return `workspace grew to ${mb} MiB (limit ${spec.limits.diskMb} MiB)`;
  }
  if (!dirs.bounded) {
    const mb = await dirSizeMb(dirs.root);
    if (mb !== undefined && mb > dirs.sizeMb)
      return `HOME, /tmp and config grew to ${mb} MiB (limit ${dirs.sizeMb} MiB)`;
  }
  // the tmpfs bounds them, but full it starves the core of room for its task's files: the
  // agent's commands filled it (the core writes a task's history there, far below the bound)
  else if (await filesystemFull(dirs.root))
    return `HOME, /tmp and the core's config are full (their ${dirs.sizeMb} MiB tmpfs)`;
  return undefined;
}
