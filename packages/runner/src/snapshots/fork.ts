import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { match } from "ts-pattern";
import { FlakegymError } from "../errors.js";
import { runHostCommand } from "../gc/command-coprocess.js";
import { writeOwnerRecord } from "../gc/owner.js";
import { type UnmountRecord, unmountRetry } from "../gc/unmount.js";

/**
 * How a per-trajectory workspace is made from a snapshot:
 * - reflink: `cp --reflink=always` (btrfs, xfs, …): copy-on-write per file, no privileges;
 * - overlay: an overlayfs mount with the snapshot as the read-only lower layer (root);
 * - copy: a plain recursive copy (always works; cost grows with the repo size). Hard links are not
 *   used: they share inodes, so a write through one fork would change the snapshot.
 */
export type ForkMethod = "reflink" | "overlay" | "copy";
export type ForkMethodChoice = ForkMethod | "auto";

/** A fork of a snapshot tree. `tree` holds the same entries as the snapshot's tree (workspace/, deps/). */
export interface Fork {
  readonly method: ForkMethod;
  /** Host path of the forked tree. */
  readonly tree: string;
  /**
   * How writes are bounded: "tmpfs" (overlay upper layer on a size-limited tmpfs: ENOSPC at the
   * quota) or "none" (the worker enforces it with RLIMIT_FSIZE and a size watchdog).
   */
  readonly quota: "tmpfs" | "none";
  readonly forkMs: number;
  /**
   * Unmounts (overlay; retried, then detached lazily while busy) and removes the fork. Idempotent.
   * Returns how each unmount went (empty for reflink/copy and on later calls).
   */
  release(): Promise<UnmountRecord[]>;
}

export interface ForkOptions {
  /** Directory that will hold the fork (created; must not exist or be empty). */
  readonly dest: string;
  readonly method?: ForkMethodChoice;
  /** Writable space for the fork, MiB (enforced for overlay via a tmpfs upper layer). */
  readonly quotaMb?: number;
  readonly signal?: AbortSignal;
}

const probes = new Map<string, Promise<ForkMethod[]>>();

async function run(
  cmd: string,
  args: string[],
  signal?: AbortSignal,
): Promise<{ ok: boolean; stderr: string }> {
  const r = await execa(cmd, args, {
    reject: false,
    timeout: 600_000,
    stdin: "ignore",
    ...(signal ? { cancelSignal: signal } : {}),
  });
  return { ok: r.exitCode === 0, stderr: r.stderr };
}

/**
 * A mount by the runner's command coprocess (gc/command-coprocess.ts), not a spawn of the runner
 * each: with a thousand trajectories at once those forks of the runner were most of its CPU.
 */
async function mount(args: string[]): Promise<{ ok: boolean; stderr: string }> {
  const r = await runHostCommand(["mount", ...args], 600);
  return { ok: r.exitCode === 0, stderr: r.output };
}

/** Which methods work for trees under `dir` on this machine (probed once per dir; best first). */
export function availableForkMethods(dir: string): Promise<ForkMethod[]> {
  let p = probes.get(dir);
  if (!p) {
    p = (async () => {
      const methods: ForkMethod[] = [];
      const probe = join(dir, `.fork-probe-${process.pid}-${randomBytes(4).toString("hex")}`);
      await mkdir(join(probe, "lower"), { recursive: true });
      try {
        await writeFile(join(probe, "lower", "f"), "x");
        if ((await run("cp", ["--reflink=always", join(probe, "lower", "f"), join(probe, "g")])).ok) {
          methods.push("reflink");
        }
        for (const d of ["upper", "work", "merged"]) await mkdir(join(probe, d));
        const opts = `lowerdir=${join(probe, "lower")},upperdir=${join(probe, "upper")},workdir=${join(probe, "work")}`;
        if ((await run("mount", ["-t", "overlay", "overlay", "-o", opts, join(probe, "merged")])).ok) {
          await run("umount", [join(probe, "merged")]);
          methods.push("overlay");
        }
      } finally {
        await rm(probe, { recursive: true, force: true });
      }
      methods.push("copy");
      return methods;
    })();
    probes.set(dir, p);
  }
  return p;
}

/**
 * Forks the snapshot tree `lower` into `opts.dest`. Forks are independent: writing in one never
 * changes the snapshot or another fork.
 */
export async function forkTree(lower: string, opts: ForkOptions): Promise<Fork> {
  const methods = await availableForkMethods(join(opts.dest, ".."));
  const choice = opts.method ?? "auto";
  const method: ForkMethod = choice === "auto" ? methods[0]! : choice;
  if (!methods.includes(method)) {
    throw new FlakegymError(
      "E_FORK_METHOD",
      `fork method '${method}' does not work here (available: ${methods.join(", ")})`,
      {
        hint: "use --fork-method auto, or one of the available methods",
      },
    );
  }
  const started = performance.now();
  await mkdir(opts.dest, { recursive: true });
  // who made it: `flakegym gc` removes the fork (mounts first) once this process is gone
  await writeOwnerRecord(opts.dest, "fork");
  const tree = join(opts.dest, "tree");
  let released = false;
  const fail = async (what: string, stderr: string): Promise<never> => {
    await rm(opts.dest, { recursive: true, force: true }).catch(() => {});
    throw new FlakegymError("E_FORK", `${what} failed for ${opts.dest}: ${stderr.trim()}`);
  };
  return await match(method)
    .with("overlay", async (): Promise<Fork> => {
      const layer = join(opts.dest, "layer");
      await mkdir(layer);
      let quota: Fork["quota"] = "none";
      if (opts.quotaMb !== undefined) {
        const r = await mount(["-t", "tmpfs", "-o", `size=${opts.quotaMb}m,mode=0755`, "tmpfs", layer]);
        if (!r.ok) await fail("mount tmpfs", r.stderr);
        quota = "tmpfs";
      }
      await mkdir(join(layer, "upper"));
      await mkdir(join(layer, "work"));
      await mkdir(tree);
      const o = `lowerdir=${lower},upperdir=${join(layer, "upper")},workdir=${join(layer, "work")}`;
      const r = await mount(["-t", "overlay", "overlay", "-o", o, tree]);
      if (!r.ok) {
        if (quota === "tmpfs") await unmountRetry(layer);
        await fail("mount overlay", r.stderr);
      }
      return {
        method,
        tree,
        quota,
        forkMs: performance.now() - started,
        async release() {
          if (released) return [];
          released = true;
          const records = [await unmountRetry(tree)];
          if (quota === "tmpfs") records.push(await unmountRetry(layer));
          const stuck = records.filter((x) => x.result === "failed");
          if (stuck.length > 0) {
            // never rm through a mount: leave the fork to `flakegym gc`
            throw new FlakegymError(
              "E_FORK_RELEASE",
              `cannot unmount ${stuck.map((x) => `${x.path} (${x.detail})`).join(", ")}`,
              { hint: "the fork stays; `flakegym gc` removes it once this run has ended" },
            );
          }
          await rm(opts.dest, { recursive: true, force: true });
          return records;
        },
      };
    })
    .with("reflink", "copy", async (m): Promise<Fork> => {
      const args = m === "reflink" ? ["-a", "--reflink=always", lower, tree] : ["-a", lower, tree];
      const r = await run("cp", args, opts.signal);
      if (!r.ok) await fail(`cp ${args[0]} ${args[1]}`, r.stderr);
      return {
        method: m,
        tree,
        quota: "none",
        forkMs: performance.now() - started,
        async release() {
          if (released) return [];
          released = true;
          await rm(opts.dest, { recursive: true, force: true });
          return [];
        },
      };
    })
    .exhaustive();
}
