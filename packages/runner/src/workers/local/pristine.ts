import { cp, lstat, mkdir, readdir, readFile, readlink } from "node:fs/promises";
import { join, relative } from "node:path";
import { createClineClient } from "@flakegym/cline-vendor";
import { keptAnonMb } from "./kept-memory.js";
import type { LocalWorkerState } from "./worker-state.js";

/**
 * What a pooled worker was when it was first ready, before any trajectory: what a reset restores
 * and checks against (reset-worker.ts, issue 47). Taken by us, from what the core itself made at
 * boot — never from anything an agent touched.
 */
export interface Pristine {
  /** Host pids in the worker's cgroup when ready: the sandbox's bwrap, the supervisor, cline-host, cline-core. */
  readonly kept: readonly number[];
  /** The kept processes' anonymous memory when ready, MiB (kept-memory.ts). */
  readonly memoryMb: number | undefined;
  /** `<workerDir>/pristine`: copies of HOME and the core's config dir (outside every sandbox). */
  readonly dir: string;
  /** The core's state (`getLatestState`) when ready. */
  readonly state: Readonly<Record<string, unknown>>;
  /** Every path of HOME and the config dir when ready, with what it was (see {@link treeOf}). */
  readonly trees: Readonly<Record<string, TreeListing>>;
}

/** A dir's entries by relative path: `d` (dir), `l:<target>` (symlink), `f:<content>` (file). */
export type TreeListing = Readonly<Record<string, string>>;

/**
 * Files of the config dir the core (or its supervisor) keeps open: never copied over nor removed
 * (a copy under an open sqlite file corrupts it); the log is emptied instead.
 */
export const CORE_OPEN_FILES: ReadonlySet<string> = new Set([
  "core.log",
  "data/locks.db",
  "data/locks.db-wal",
  "data/locks.db-shm",
  "data/locks.db-journal",
]);

/**
 * Files the core writes from its own memory: restored from the pristine copy like every other
 * file, then rewritten by the core when the reset reloads its state (`resetState`), so their
 * bytes are checked through that state (compared field by field), not byte by byte.
 */
export const CORE_STATE_FILES: ReadonlySet<string> = new Set([
  "data/globalState.json",
  "data/secrets.json",
  "data/state/taskHistory.json",
  "data/workspace/workspaceState.json",
]);

/**
 * The core's MCP settings file: its MCP hub reads it at boot and on a change event only, and
 * nothing the core answers shows which servers the hub holds, so a reset cannot prove the hub
 * pristine once the file was touched — such a worker is retired (its bytes changed).
 */
export const MCP_SETTINGS_FILE = "data/settings/cline_mcp_settings.json";

/** Every entry under `root` (lstat: symlinks are never followed). */
export async function treeOf(root: string): Promise<TreeListing> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const p = join(dir, name);
      const rel = relative(root, p);
      const st = await lstat(p);
      if (st.isDirectory()) {
        out[rel] = "d";
        await walk(p);
      } else if (st.isSymbolicLink()) out[rel] = `l:${await readlink(p)}`;
      else if (st.isFile()) out[rel] = `f:${(await readFile(p)).toString("base64")}`;
      else out[rel] = `other:${st.mode}`;
    }
  };
  await walk(root);
  return out;
}

/** The worker's HOME and config dir on the host, by the name the pristine copy keeps them under. */
export function stateDirsOf(ws: LocalWorkerState): Record<"home" | "config", string> {
  return { home: ws.prepared.homeDir ?? ws.dirs.home, config: ws.dirs.config };
}

/** Records a ready pooled worker's pristine state (its core up, no trajectory yet). */
export async function recordPristine(ws: LocalWorkerState): Promise<Pristine> {
  const dir = join(ws.workerDir, "pristine");
  const trees: Record<string, TreeListing> = {};
  for (const [name, path] of Object.entries(stateDirsOf(ws))) {
    await mkdir(join(dir, name), { recursive: true });
    await cp(path, join(dir, name), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => name !== "config" || !CORE_OPEN_FILES.has(relative(path, src)),
    });
    trees[name] = await treeOf(path);
  }
  // /tmp is wiped, not restored: only the mount points bubblewrap made in it stay
  trees.tmp = await treeOf(ws.dirs.tmp);
  const kept = await ws.prepared.cgroup.pids();
  const client = createClineClient({ address: ws.agent!.address });
  try {
    const state = await client.state.getLatestState({ deadlineMs: 15_000 });
    return {
      kept,
      memoryMb: await keptAnonMb(kept),
      dir,
      state,
      trees,
    };
  } finally {
    client.close();
  }
}
