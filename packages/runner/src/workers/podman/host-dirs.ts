import { chown, mkdir, rm } from "node:fs/promises";
import { ownerTag, selfOwner, writeOwnerRecord } from "../../gc/owner.js";
import { type BoundedDirs, makeBoundedDirs } from "../bounded-dirs.js";

/** A podman worker's host dir (owner.json) and its bounded state. */
export interface HostDirs {
  readonly dir: string;
  readonly dirs: BoundedDirs;
}

/** The worker's host dir: owner.json and the bounded tmpfs with /tmp, HOME, config, sockets. */
export async function makeHostDirs(
  dir: string,
  owner: { uid: number; gid: number },
  tmpSizeMb: number,
): Promise<HostDirs> {
  await mkdir(dir, { recursive: true });
  await writeOwnerRecord(dir, "podman-worker");
  try {
    const dirs = await makeBoundedDirs(dir, tmpSizeMb);
    // the container runs as the workspace's owner, without capabilities
    for (const d of [dirs.tmp, dirs.home, dirs.config, dirs.sock]) await chown(d, owner.uid, owner.gid);
    return { dir, dirs };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** podmanRunArgs' state and owner options for a worker. */
export function stateArgs(dirs: BoundedDirs) {
  return {
    owner: ownerTag(selfOwner()),
    ...(dirs.bounded ? { state: { tmp: dirs.tmp, home: dirs.home } } : {}),
  };
}
