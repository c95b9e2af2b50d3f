import { lstat, mkdir, readdir, readlink, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { holdHarborTree } from "../../gc/harbor-tree-use.js";
import { type Bind, mountPointsIn, type RootEntry, type SystemRoot } from "./bwrap-args.js";

/**
 * A built root filesystem (a Harbor task's environment, tasks/dockerfile-build.ts) as the local
 * sandbox's system: its top-level entries read once, and the mount points the sandbox's own binds
 * need made inside it beforehand (bwrap cannot create them inside a read-only bind). A mount point
 * is made only through real directories of the tree: a symbolic link on the way (which, resolved on
 * the host, could point anywhere) is refused by name.
 */

/** Where the runner's node appears in a sandbox whose /usr is not this machine's. */
export const ROOTFS_NODE = "/opt/flakegym-node/bin/node";

/** The tree's top-level entries. */
export async function readSystemRoot(dir: string): Promise<SystemRoot> {
  // a built Harbor tree: this process becomes its user, so flakegym gc leaves it while we run
  if (!(await holdHarborTree(dir)))
    throw new Error(
      `the task's built environment ${dir} is not in the flakegym cache (never built on this machine, or removed by \`flakegym gc --harbor-unused-days\`): import the task again with \`flakegym tasks import --build-env\``,
    );
  const entries: RootEntry[] = [];
  const listed = await readdir(dir, { withFileTypes: true }).catch((err: Error) => {
    throw new Error(
      `the task's built environment ${dir} cannot be read (${err.message}): import the task again with \`flakegym tasks import --build-env\` on this machine (it builds into the flakegym cache)`,
    );
  });
  for (const e of listed) {
    if (e.isSymbolicLink())
      entries.push({ name: e.name, kind: "symlink", target: await readlink(join(dir, e.name)) });
    else if (e.isDirectory()) entries.push({ name: e.name, kind: "dir" });
    else if (e.isFile()) entries.push({ name: e.name, kind: "file" });
  }
  return { dir, entries: entries.sort((a, b) => (a.name < b.name ? -1 : 1)) };
}

/** Makes `rel` (a directory, or an empty file when `file`) inside `root`, through real directories only. */
async function makeInside(root: string, rel: string, file: boolean): Promise<void> {
  const parts = rel.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
  let at = root;
  for (let i = 0; i < parts.length; i++) {
    at = join(at, parts[i]!);
    const st = await lstat(at).catch(() => undefined);
    const last = i === parts.length - 1;
    if (st?.isSymbolicLink())
      throw new Error(
        `the environment's root filesystem has a symbolic link at /${parts.slice(0, i + 1).join("/")}, where the sandbox mounts /${rel}: rebuild the environment without it`,
      );
    if (st) continue;
    if (last && file) await writeFile(at, "", { flag: "wx" });
    else await mkdir(at);
  }
}

/** Makes the mount points of `binds` inside the tree's read-only entries. */
export async function prepareMountPoints(root: SystemRoot, binds: readonly Bind[]): Promise<void> {
  const byDest = new Map(binds.map((b) => [b.dest.replace(/^\/+/, ""), b]));
  for (const rel of mountPointsIn(
    root,
    binds.map((b) => b.dest),
  )) {
    const b = byDest.get(rel)!;
    const src = await stat(b.src).catch(() => undefined);
    if (!src) {
      if (b.optional) continue;
      throw new Error(`bind source ${b.src} is missing`);
    }
    await makeInside(root.dir, rel, !src.isDirectory());
  }
}
