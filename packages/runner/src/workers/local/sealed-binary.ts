import { createHash } from "node:crypto";
import { chmod, copyFile, mkdir, readFile, readlink, rename, rm, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { tempPathBeside } from "../../run-format/temp-name.js";

/**
 * Execute-only copies of the binaries a worker keeps running across trajectories (issue 47): the
 * supervisor's and the core's node, cline-host. Linux marks a process non-dumpable when it execs
 * a file its user cannot read, and a non-dumpable process refuses every ptrace-mode access
 * (/proc/<pid>/mem, maps, environ, fd, process_vm_readv) to a caller without CAP_SYS_PTRACE over
 * it — the agent's commands in the sandbox hold no capability at all. So an agent cannot read what
 * the previous trajectory left in the core's heap. The copies live in flakegym's cache, bound
 * read-only into the sandbox (the agent, owner of the file through the sandbox's uid map, cannot
 * chmod it on a read-only mount).
 */

/** Mode of a sealed copy: execute only, for everyone. */
export const SEALED_MODE = 0o111;

/** Whether a file mode lets a process exec it but nobody read it (what makes the process non-dumpable). Pure. */
export function isSealedMode(mode: number): boolean {
  return (mode & 0o444) === 0 && (mode & 0o111) !== 0;
}

/** Where the sealed copy of `src` (of `size` bytes, modified at `mtimeMs`) lives under `cacheRoot`. Pure. */
export function sealedPathOf(cacheRoot: string, src: string, size: number, mtimeMs: number): string {
  const key = createHash("sha256")
    .update(`${src}\0${size}\0${Math.trunc(mtimeMs)}`)
    .digest("hex")
    .slice(0, 16);
  return join(cacheRoot, "sealed-bin", key, basename(src));
}

/**
 * The sealed copy of `src`, made once (by a rename of a temp of its own, so a concurrent maker — another
 * worker of this process or another process — never sees half a file nor loses its temp to the other).
 */
export async function sealedCopy(cacheRoot: string, src: string): Promise<string> {
  const s = await stat(src);
  const dest = sealedPathOf(cacheRoot, src, s.size, s.mtimeMs);
  const have = await stat(dest).catch(() => undefined);
  if (have && have.size === s.size && isSealedMode(have.mode)) return dest;
  await mkdir(join(dest, ".."), { recursive: true });
  const tmp = tempPathBeside(dest);
  try {
    await copyFile(src, tmp);
    await chmod(tmp, SEALED_MODE);
    await rename(tmp, dest);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new Error(
      `could not make the execute-only copy of ${src} at ${dest}: ${(err as Error).message}; ` +
        "check that flakegym's cache dir ($FLAKEGYM_CACHE) is writable",
    );
  }
  return dest;
}

/** One kept process of a worker as the host sees it. */
export interface KeptProcess {
  readonly pid: number;
  readonly comm: string;
  /** Mode of the file it runs (/proc/<pid>/exe); undefined: unreadable or gone. */
  readonly exeMode: number | undefined;
}

/**
 * The kept processes an agent could read the memory of: every one but bubblewrap's own (the
 * sandbox's init holds nothing of a trajectory) that does not run a sealed binary. Pure.
 */
export function unsealedOf(kept: readonly KeptProcess[]): number[] {
  return kept
    .filter((k) => k.comm !== "bwrap" && (k.exeMode === undefined || !isSealedMode(k.exeMode)))
    .map((k) => k.pid);
}

/** What the host sees of `pids` (/proc/<pid>/comm and the mode of /proc/<pid>/exe's target). */
export async function keptProcesses(pids: readonly number[]): Promise<KeptProcess[]> {
  return await Promise.all(
    pids.map(async (pid) => {
      const comm = (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "")).trim();
      const exe = await readlink(`/proc/${pid}/exe`).catch(() => undefined);
      const mode = exe ? (await stat(`/proc/${pid}/exe`).catch(() => undefined))?.mode : undefined;
      return { pid, comm, exeMode: mode };
    }),
  );
}
