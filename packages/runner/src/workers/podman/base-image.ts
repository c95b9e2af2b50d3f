import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../../errors.js";
import { tempPathBeside } from "../../run-format/temp-name.js";
import { type PodmanState, pm } from "./backend-state.js";
import { BASE_IMAGE } from "./options.js";

/** Writes the base image's rootfs as a tar under `dir` (pure file work) and returns its path. */
export async function writeBaseRootfs(dir: string): Promise<string> {
  const root = join(dir, "rootfs");
  await rm(root, { recursive: true, force: true });
  for (const d of [
    "etc",
    "tmp",
    "workspace",
    "deps",
    "sandbox-home",
    "proc",
    "dev",
    "sys",
    "run/flakegym",
    "usr",
    "opt",
  ]) {
    await mkdir(join(root, d), { recursive: true });
  }
  for (const l of ["bin", "lib", "lib64", "sbin"]) await symlink(`usr/${l}`, join(root, l));
  await writeFile(
    join(root, "etc", "passwd"),
    "root:x:0:0::/root:/bin/sh\nagent:x:1000:1000::/sandbox-home:/bin/sh\n",
  );
  await writeFile(join(root, "etc", "group"), "root:x:0:\nagent:x:1000:\n");
  const tar = join(dir, "rootfs.tar");
  const tmp = tempPathBeside(tar);
  await execa("tar", ["--numeric-owner", "-C", root, "-cf", tmp, "."], { stdin: "ignore" });
  await rename(tmp, tar);
  await rm(root, { recursive: true, force: true });
  return tar;
}

/** Imports {@link BASE_IMAGE} once per backend unless present; a failed import is retried by a later worker. */
export function ensureBaseImage(st: PodmanState): Promise<void> {
  st.imageReady ??= importBaseImage(st);
  st.imageReady.catch(() => {
    st.imageReady = undefined; // a later worker retries
  });
  return st.imageReady;
}

async function importBaseImage(st: PodmanState): Promise<void> {
  if ((await pm(st, ["image", "exists", BASE_IMAGE])).exitCode === 0) return;
  const dir = join(st.stateDir, `base-${randomBytes(3).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  try {
    const tar = await writeBaseRootfs(dir);
    const r = await pm(st, ["import", tar, BASE_IMAGE]);
    if (r.exitCode !== 0) {
      throw new FlakegymError(
        "E_PODMAN",
        `podman import of ${BASE_IMAGE} failed (exit ${r.exitCode}): ${r.stderr.trim()}`,
        {
          hint: "check that podman works (podman info); the image is a local rootfs, no registry is used",
        },
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
