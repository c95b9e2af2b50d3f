import { mkdir } from "node:fs/promises";
import { execa } from "execa";

/**
 * Mounts a tmpfs of `size` (e.g. `64k`) at `dir` (made if missing) for a case that needs a full
 * disk; false, with the skip and its reason printed, where no tmpfs can be mounted here.
 */
export async function mountSmallTmpfs(dir: string, size: string, what: string): Promise<boolean> {
  await mkdir(dir, { recursive: true });
  const mount = await execa("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { reject: false });
  if (mount.exitCode === 0) return true;
  console.log(`chaos ${what}: skipped: cannot mount a tmpfs here (${String(mount.stderr).trim()})`);
  return false;
}

/** Unmounts a tmpfs {@link mountSmallTmpfs} mounted (lazily: a process may still hold it). */
export async function unmountTmpfs(dir: string): Promise<void> {
  await execa("umount", ["-l", dir], { reject: false });
}
