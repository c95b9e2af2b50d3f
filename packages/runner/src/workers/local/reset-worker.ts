import { cp, lstat, readdir, readFile, readlink, rm, truncate, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { createClineClient } from "@flakegym/cline-vendor";
import { execa } from "execa";
import { currentMountPoints, unmountRetry } from "../../gc/unmount.js";
import {
  needsCoreCollection,
  pidsToKill,
  type ResetReport,
  sandboxNamespaces,
  stateDiffOf,
  treeDiffOf,
} from "../pool/reuse.js";
import { collectCoreGarbage, corePidAmong } from "./core-collect.js";
import { keptAnonMb } from "./kept-memory.js";
import {
  CORE_OPEN_FILES,
  CORE_STATE_FILES,
  MCP_SETTINGS_FILE,
  type Pristine,
  stateDirsOf,
  treeOf,
} from "./pristine.js";
import { keptProcesses, unsealedOf } from "./sealed-binary.js";
import { SANDBOX_PATHS } from "./shape.js";
import { armWallClock, endedError, type LocalWorkerState } from "./worker-state.js";

/** Kills every process of the worker but the kept ones, until none is left or `ms` passed; the survivors. */
async function killStrays(ws: LocalWorkerState, kept: readonly number[], ms: number): Promise<number[]> {
  const end = Date.now() + ms;
  for (;;) {
    const strays = pidsToKill(await ws.prepared.cgroup.pids(), kept);
    if (strays.length === 0 || Date.now() > end) return strays;
    for (const pid of strays) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Unmounts the adopted fork from the slot (the slot's own bind stays); mounts left above the slot's own. */
async function unmountFork(ws: LocalWorkerState): Promise<number> {
  const slot = ws.slot!;
  const count = async (p: string) => (await currentMountPoints()).filter((m) => m === p).length;
  let left = 0;
  for (const p of [slot.deps, slot.workspace]) {
    for (let i = 0; i < 4 && (await count(p)) > 1; i++) await unmountRetry(p, { attempts: 2, delayMs: 100 });
    left += Math.max(0, (await count(p)) - 1);
  }
  return left;
}

/** Empties `dir` (entries removed, never followed) and copies `from` (ours, made at boot) back, `keep` aside. */
async function restoreDir(dir: string, from: string, keep: ReadonlySet<string>): Promise<void> {
  await removeUnkept(dir, dir, keep);
  await cp(from, dir, { recursive: true, verbatimSymlinks: true, force: true, errorOnExist: false });
}

/** Every entry of `dir` but the kept ones (paths relative to `root`) removed; dirs holding kept ones are entered. */
async function removeUnkept(root: string, dir: string, keep: ReadonlySet<string>): Promise<void> {
  const prefixes = new Set(
    [...keep].flatMap((k) =>
      k
        .split("/")
        .slice(0, -1)
        .map((_, i, a) => a.slice(0, i + 1).join("/")),
    ),
  );
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const rel = relative(root, join(dir, name));
    if (keep.has(rel)) continue;
    if (prefixes.has(rel)) await removeUnkept(root, join(dir, name), keep);
    else await rm(join(dir, name), { recursive: true, force: true });
  }
}

/**
 * Inside the sandbox's own namespaces (what no host dir shows): POSIX shared memory and message
 * queues, SysV IPC objects — removed, then counted. Our fixed command, run by us as root in the
 * core's mount and IPC namespaces; it reads no file the agent wrote.
 */
async function wipeNamespaces(kept: readonly number[], hostOnly: string): Promise<string | undefined> {
  const core = await corePidOf(kept);
  if (core === undefined)
    return "the core's process (in namespaces of its own) was not found among the kept ones";
  // a second guard: the sandbox's root has the sandbox's HOME and not the host-only pristine dir
  const quoted = `'${hostOnly.replaceAll("'", "'\\''")}'`;
  const script =
    `[ -d ${SANDBOX_PATHS.home} ] && [ ! -e ${quoted} ] || exit 97; ` +
    "find /dev/shm /dev/mqueue -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + 2>/dev/null; ipcrm --all 2>/dev/null; " +
    "echo $(find /dev/shm /dev/mqueue -mindepth 1 2>/dev/null | wc -l) $(ipcs -m -q -s | grep -c '^0x')";
  const r = await execa("nsenter", ["-t", String(core), "-m", "-i", "--", "/bin/sh", "-c", script], {
    reject: false,
    timeout: 10_000,
    stdin: "ignore",
  });
  if (r.exitCode !== 0) return `nsenter into the sandbox failed: ${r.stderr.trim() || `exit ${r.exitCode}`}`;
  return r.stdout.trim() === "0 0"
    ? undefined
    : `left in the sandbox's /dev/shm, /dev/mqueue or IPC: ${r.stdout.trim()}`;
}

/**
 * The kept pid running cline-core inside the sandbox: a `node` process whose mount AND IPC
 * namespaces are not ours (the wrappers around bwrap — the cgroup join, prlimit, bwrap's monitor
 * — carry the core's path in their arguments too, but live in the host's namespaces: entering
 * one of them would wipe the host's /dev/shm and IPC).
 */
async function corePidOf(kept: readonly number[]): Promise<number | undefined> {
  const ns = async (pid: number | "self", kind: string) =>
    await readlink(`/proc/${pid}/ns/${kind}`).catch(() => "");
  const [mnt, ipc] = [await ns("self", "mnt"), await ns("self", "ipc")];
  for (const pid of kept) {
    const comm = (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "")).trim();
    const cmd = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (comm !== "node" || !cmd.includes("cline-core")) continue;
    const [m, i] = [await ns(pid, "mnt"), await ns(pid, "ipc")];
    if (m && i && mnt && ipc && sandboxNamespaces({ self: { mnt, ipc }, target: { mnt: m, ipc: i } }))
      return pid;
  }
  return undefined;
}

/** The core's state reloaded from the restored files (`resetState`), and how it differs from the pristine one. */
async function resetCoreState(ws: LocalWorkerState, p: Pristine): Promise<string[]> {
  const client = createClineClient({ address: ws.agent!.address });
  try {
    const o = { deadlineMs: 15_000 };
    await client.task.clearTask(o).catch(() => {});
    await client.unary("cline.StateService/resetState", { global: true }, o);
    await client.unary("cline.StateService/resetState", { global: false }, o);
    // the one key the core's boot migration writes (false without an API key); the reset clears it
    const boot = bootGlobalState(p);
    if (typeof boot.welcomeViewCompleted === "boolean")
      await client.unary(
        "cline.StateService/setWelcomeViewCompleted",
        { value: boot.welcomeViewCompleted },
        o,
      );
    await client.state.flushPendingState(o);
    return stateDiffOf(p.state, await client.state.getLatestState(o));
  } finally {
    client.close();
  }
}

/** The global state file as the core wrote it at boot ({} when it had written none). */
function bootGlobalState(p: Pristine): Record<string, unknown> {
  const entry = p.trees.config?.["data/globalState.json"];
  if (!entry?.startsWith("f:")) return {};
  try {
    return JSON.parse(Buffer.from(entry.slice(2), "base64").toString("utf8")) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/**
 * Whether the MCP settings file holds other bytes than at boot (the core rewrites it itself during
 * a task, so its inode says nothing). Bytes written and put back are left to the hub's own reload
 * on the change events (docs/design/performance.md names this residue).
 */
async function mcpTouched(ws: LocalWorkerState, p: Pristine): Promise<boolean> {
  const path = join(ws.dirs.config, MCP_SETTINGS_FILE);
  const st = await lstat(path).catch(() => undefined);
  const now = st?.isFile() ? `f:${(await readFile(path)).toString("base64")}` : undefined;
  return now !== p.trees.config?.[MCP_SETTINGS_FILE];
}

/** HOME, /tmp and the config dir back to what they were when ready; paths that still differ. */
async function restoreFiles(ws: LocalWorkerState, p: Pristine): Promise<string[]> {
  const dirs = stateDirsOf(ws);
  const mcp = (await mcpTouched(ws, p))
    ? [`config/${MCP_SETTINGS_FILE} (changed: the core's MCP hub cannot be proven reset)`]
    : [];
  // /tmp keeps the dirs bubblewrap made in it when the sandbox started: the mount points of the
  // worker's own dirs when they live below the host's /tmp (removed, the core loses its config dir)
  const skeleton = p.trees.tmp ?? {};
  await removeUnkept(ws.dirs.tmp, ws.dirs.tmp, new Set(Object.keys(skeleton)));
  await restoreDir(dirs.home, join(p.dir, "home"), new Set());
  await restoreDir(dirs.config, join(p.dir, "config"), CORE_OPEN_FILES);
  // the core's log holds the last task's output: emptied, never removed (the supervisor writes it)
  await truncate(join(dirs.config, "core.log"), 0).catch(() => {});
  // a state store the core had not written yet when ready: empty, as the core reads an absent one
  for (const f of CORE_STATE_FILES)
    if (f.endsWith(".json") && !f.endsWith("taskHistory.json") && !(`${f}` in (p.trees.config ?? {})))
      await writeFile(join(dirs.config, f), "{}").catch(() => {});
  const dirty: string[] = [];
  for (const [name, dir] of Object.entries(dirs)) {
    const ignored =
      name === "config" ? new Set([...CORE_OPEN_FILES, ...CORE_STATE_FILES]) : new Set<string>();
    dirty.push(...treeDiffOf(p.trees[name] ?? {}, await treeOf(dir), ignored).map((x) => `${name}/${x}`));
  }
  dirty.push(...treeDiffOf(skeleton, await treeOf(ws.dirs.tmp)).map((x) => `tmp/${x}`));
  return [...mcp, ...dirty];
}

/**
 * Resets a pooled worker after its trajectory to what it was when first ready (issue 47): every
 * process but the kept ones killed (the cgroup holds every process of the sandbox, double-forked
 * and setsid ones too), the fork unmounted from the slot, the sandbox's shared memory and IPC
 * removed, /tmp wiped, HOME and the config dir restored from the pristine copies, the core's state
 * reloaded from them and compared. Reports what it found; the pool judges it (reuse.ts).
 */
export async function resetWorker(ws: LocalWorkerState): Promise<ResetReport> {
  if (ws.exit) throw endedError(ws, ws.exit);
  const p = ws.pristine;
  if (!p || !ws.slot || !ws.agent) throw new Error(`worker ${ws.id} has no pristine state to reset to`);
  clearTimeout(ws.wallClock);
  ws.active = undefined;
  const strayPids = await killStrays(ws, p.kept, 5000);
  const alive = await ws.prepared.cgroup.pids();
  const keptGone = p.kept.filter((k) => !alive.includes(k));
  const unsealedPids = unsealedOf(await keptProcesses(p.kept.filter((k) => alive.includes(k))));
  const slotMounts = await unmountFork(ws);
  const nsLeft = await wipeNamespaces(p.kept, p.dir);
  const dirtyPaths = await restoreFiles(ws, p);
  const stateDiff = await resetCoreState(ws, p);
  const { memoryMb, coreGc, collected } = await readMemory(ws, p, alive);
  ws.assigned = false;
  armWallClock(ws);
  return {
    strayPids,
    keptGone,
    unsealedPids,
    dirtyPaths,
    slotMounts,
    stateDiff,
    ...(memoryMb !== undefined ? { memoryMb } : {}),
    ...(p.memoryMb !== undefined ? { firstMemoryMb: p.memoryMb } : {}),
    ...(nsLeft ? { failure: nsLeft } : {}),
    ...(coreGc ? { coreGcMissed: coreGc } : {}),
    coreCollected: collected,
  };
}

/**
 * The kept processes' memory as the rule judges it: read as the trajectory left it, and only when
 * that is near the bound (reuse.ts `needsCoreCollection`) read again after the core's collection.
 */
async function readMemory(ws: LocalWorkerState, p: Pristine, alive: readonly number[]) {
  const kept = p.kept.filter((k) => alive.includes(k));
  const before = await keptAnonMb(kept);
  if (!needsCoreCollection(before, p.memoryMb)) {
    // what the reset's calls made the core log: emptied, as after a collection
    await truncate(join(stateDirsOf(ws).config, "core.log"), 0).catch(() => {});
    return { memoryMb: before, collected: false };
  }
  const coreGc = await collectGarbage(ws, p.kept);
  return { memoryMb: await keptAnonMb(kept), coreGc, collected: coreGc === undefined };
}

/**
 * The core's full GC (core-collect.ts), then its log emptied of the marker; why it did not
 * happen, else undefined. Before the memory reading: what it then measures is what the core keeps.
 */
async function collectGarbage(ws: LocalWorkerState, kept: readonly number[]): Promise<string | undefined> {
  const pid = await corePidAmong(kept);
  if (pid === undefined) return "the core's process was not found among the kept ones";
  const log = join(stateDirsOf(ws).config, "core.log");
  const r = await collectCoreGarbage(pid, log);
  await truncate(log, 0).catch(() => {});
  return r.done ? undefined : r.why;
}
