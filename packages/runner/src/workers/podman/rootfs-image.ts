import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../../errors.js";
import { holdHarborTree } from "../../gc/harbor-tree-use.js";
import type { Bind } from "../local/bwrap-args.js";
import { ROOTFS_NODE } from "../local/system-root.js";
import type { WorkerSpec } from "../types.js";
import { type PodmanState, pm } from "./backend-state.js";

/**
 * A task's built root filesystem (a Harbor Dockerfile built here, tasks/dockerfile-build.ts) as a
 * podman image: `podman import` of the tree, once per tree (its content key names the image), no
 * registry. Its workers run from that image in place of the base image with this machine's /usr:
 * the /usr bind goes, the runner's node is bound at {@link ROOTFS_NODE} for the Cline core.
 */

/** The image name of a built tree (its directory name is its content key). Pure. */
export const rootfsImageOf = (systemRoot: string) =>
  `localhost/flakegym-harbor-rootfs:${basename(systemRoot)}`;

/** The backend's binds for a worker on a built tree: no host /usr; the runner's node beside it when it lives there. Pure. */
export function rootfsBinds(
  binds: readonly Bind[],
  execPath: string,
): { binds: Bind[]; nodeInImage?: string } {
  const kept = binds.filter((b) => b.dest !== "/usr");
  if (!execPath.startsWith("/usr/")) return { binds: kept };
  return { binds: [...kept, { src: execPath, dest: ROOTFS_NODE }], nodeInImage: ROOTFS_NODE };
}

const importing = new Map<string, Promise<void>>();

/** Imports the tree as its image unless podman has it already. */
async function importTree(st: PodmanState, systemRoot: string, image: string): Promise<void> {
  if ((await pm(st, ["image", "exists", image])).exitCode === 0) return;
  const dir = join(st.stateDir, `rootfs-${randomBytes(3).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  try {
    const tar = join(dir, "rootfs.tar");
    await execa("tar", ["--numeric-owner", "-C", systemRoot, "-cf", tar, "."], {
      stdin: "ignore",
      timeout: 600_000,
    });
    const r = await pm(st, ["import", tar, image], { timeoutMs: 600_000 });
    if (r.exitCode !== 0)
      throw new FlakegymError(
        "E_PODMAN",
        `podman import of the task's built tree ${systemRoot} failed (exit ${r.exitCode}): ${r.stderr.trim()}`,
        {
          hint: "check that podman works (podman info); import the task again with --build-env if the tree is damaged",
        },
      );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The state and spec a worker on a built tree starts with: its image imported, the binds changed. */
export async function onBuiltTree(
  st: PodmanState,
  spec: WorkerSpec,
): Promise<{ st: PodmanState; spec: WorkerSpec }> {
  const root = spec.systemRoot!;
  // this process becomes the tree's user, so flakegym gc leaves the tree and its image while we run
  if (!(await holdHarborTree(root)))
    throw new Error(
      `the task's built environment ${root} is not in the flakegym cache (never built here, or removed by \`flakegym gc --harbor-unused-days\`): import the task again with \`flakegym tasks import --build-env\``,
    );
  const image = rootfsImageOf(root);
  let p = importing.get(image);
  if (!p) {
    p = importTree(st, root, image);
    importing.set(image, p);
    p.catch(() => importing.delete(image));
  }
  await p;
  const b = rootfsBinds(st.options.binds ?? [], process.execPath);
  const { systemRoot: _, ...rest } = spec;
  return {
    st: {
      ...st,
      options: {
        ...st.options,
        image,
        importBaseImage: false,
        binds: b.binds,
        ...(b.nodeInImage ? { nodeInImage: b.nodeInImage } : {}),
      },
    },
    spec: { ...rest, image },
  };
}
