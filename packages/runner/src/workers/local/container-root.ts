import { lstat, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { BUILD_CAPS } from "../../tasks/dockerfile-build.js";

/**
 * A Harbor task's sandbox as Harbor runs its container (issue 43): root inside, the task's built
 * tree writable through a copy-on-write layer of the sandbox's own, thrown away with it. The
 * runner (root) mounts an overlay — the tree read-only below, a per-sandbox upper dir above — and
 * bwrap binds the merged dir at `/`. The sandbox's user namespace maps users 0..65535 to the same
 * ids outside (the tree's files keep the owners its build gave them, so `useradd`, `chown` and
 * `setpriv --reuid=N` work as in the image), and no user namespace can be made below it. Nothing
 * in the tree or the upper dir is read by the host: it only mounts and unmounts them.
 */

/** How many users the container's namespace maps (0..65535, Docker's usual range). */
export const CONTAINER_IDS = 65_536;

/**
 * What root keeps in the container: Docker's default set less the network and device ones (no
 * CAP_NET_RAW, CAP_NET_BIND_SERVICE, CAP_MKNOD), so package and user tools work (chown, setuid,
 * file modes) and nothing reaches past the sandbox's namespaces.
 */
export const CONTAINER_CAPS: readonly string[] = BUILD_CAPS;

/** A sandbox's writable root: the overlay's dirs under `base`. */
export interface ContainerRoot {
  readonly tree: string;
  readonly upper: string;
  readonly work: string;
  readonly merged: string;
}

/** The overlay dirs of a sandbox whose state dir is `base`. Pure. */
export function containerRootOf(tree: string, base: string): ContainerRoot {
  return {
    tree,
    upper: join(base, "upper"),
    work: join(base, "work"),
    merged: join(base, "merged"),
  };
}

/** Why a path cannot be named in an overlay's mount options (they are split on `,` and `:`), or undefined. Pure. */
export function overlayPathProblem(p: string): string | undefined {
  if (!p.startsWith("/")) return `${p} is not an absolute path`;
  return /[,:\\\n]/.test(p)
    ? `${p} holds a ',' ':' or '\\', which overlay mount options cannot name: move the flakegym cache or state dir`
    : undefined;
}

/** `mount`'s arguments for the overlay. Pure. */
export function overlayMountArgs(r: ContainerRoot): string[] {
  return [
    "-t",
    "overlay",
    "overlay",
    "-o",
    `lowerdir=${r.tree},upperdir=${r.upper},workdir=${r.work}`,
    r.merged,
  ];
}

/**
 * Whether `merged` is an overlay mount point, from /proc/self/mountinfo's text (field 5 the mount
 * point, the fstype after ` - `). Pure.
 */
export function isOverlayMount(mountinfo: string, merged: string): boolean {
  return mountinfo.split("\n").some((l) => {
    const [pre, post] = l.split(" - ");
    return pre?.split(" ")[4] === merged && post?.split(" ")[0] === "overlay";
  });
}

/** Mounts the sandbox's writable root (root only), or throws naming what failed and what to do. */
export async function mountContainerRoot(r: ContainerRoot): Promise<void> {
  for (const p of [r.tree, r.upper, r.work]) {
    const why = overlayPathProblem(p);
    if (why) throw new Error(`the sandbox's writable copy of the task's tree cannot be mounted: ${why}`);
  }
  await Promise.all([r.upper, r.work, r.merged].map((d) => mkdir(d, { recursive: true })));
  const m = await execa("mount", overlayMountArgs(r), { reject: false, timeout: 30_000, stdin: "ignore" });
  if (m.exitCode !== 0)
    throw new Error(
      `mount of the sandbox's writable copy of the task's tree ${r.tree} failed (exit ${m.exitCode ?? "signal"}): ${m.stderr.trim()}: a Harbor task's local sandbox needs a root runner on a kernel with overlayfs (else use --backend podman)`,
    );
}

/**
 * Unmounts the sandbox's root (lazily: a process still holding it lets go when it ends) and
 * removes its dirs. Acts only on an overlay mounted at `merged` (read from mountinfo): never on
 * another mount.
 */
export async function unmountContainerRoot(r: ContainerRoot): Promise<void> {
  const info = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  if (isOverlayMount(info, r.merged))
    await execa("umount", ["-l", r.merged], { reject: false, timeout: 30_000, stdin: "ignore" });
  // still mounted (the unmount failed): leave the dirs, never delete through a mount
  if (isOverlayMount(await readFile("/proc/self/mountinfo", "utf8").catch(() => ""), r.merged)) return;
  await Promise.all([r.upper, r.work, r.merged].map((d) => rm(d, { recursive: true, force: true })));
}

/** The uid_map / gid_map text of a container sandbox: 0..65535 to themselves. Pure. */
export const CONTAINER_ID_MAP = `0 0 ${CONTAINER_IDS}\n`;

/**
 * The host command a container sandbox's bwrap runs under (root only: a map of many users is
 * privileged, and newuidmap would ask /etc/subuid): `unshare --user --keep-caps` makes the
 * namespace, a child writes its uid and gid maps ({@link CONTAINER_ID_MAP}) once it is there, then
 * the command forbids user namespaces below it and becomes the namespace's root before bwrap
 * (which, root there, joins it). As `apartPrefix` does for the scoring sandbox's two users. Exit
 * 125: no namespace. Runs outside the sandbox; nothing of the workspace reaches it. Pure.
 */
export function containerPrefix(): readonly string[] {
  return [
    "/bin/sh",
    "-c",
    [
      'd=$(mktemp -d) && mkfifo "$d/go" || exit 125',
      "me=$$",
      // the child waits (≤ 10 s) until the parent's exec below is in its new user namespace
      '( n=0; while [ "$(readlink /proc/$me/ns/user)" = "$(readlink /proc/self/ns/user)" ] && [ $n -lt 2000 ]; do n=$((n + 1)); sleep 0.005; done',
      `  { printf '${CONTAINER_ID_MAP}' > /proc/$me/uid_map && printf '${CONTAINER_ID_MAP}' > /proc/$me/gid_map && echo ok; } > "$d/go" ) < /dev/null > /dev/null 2>&1 &`,
      `exec unshare --user --keep-caps -- /bin/sh -c 'read x < "$0/go"; rm -rf "$0"; [ "$x" = ok ] || { echo "flakegym: could not map the users of the Harbor container sandbox (uid_map, gid_map)" >&2; exit 125; }; echo 0 > /proc/sys/user/max_user_namespaces || { echo "flakegym: could not forbid user namespaces in the Harbor container sandbox" >&2; exit 125; }; exec setpriv --reuid=0 --regid=0 --clear-groups -- "$@"' "$d" "$@"`,
    ].join("\n"),
    "flakegym-container",
  ];
}

/** Docker's default PATH, a container's when its image sets none. */
export const CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * A container sandbox's environment: the sandbox's own (`base`: offline settings, deps caches,
 * what the spec adds), over it the image's `ENV` lines as its build recorded them, and root's
 * identity as Harbor's container has it. PATH is the image's, else Docker's default. Pure.
 */
export function containerEnv(
  base: Readonly<Record<string, string>>,
  imageEnv: Readonly<Record<string, string>>,
  spec: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    ...base,
    PATH: CONTAINER_PATH,
    HOME: "/root",
    USER: "root",
    LOGNAME: "root",
    ...imageEnv,
    ...spec,
  };
}

/** The `ENV` lines the tree's build recorded (`env` of its done mark), or none; a record that does not parse is named. */
export async function imageEnvOf(tree: string, doneMark: string): Promise<Record<string, string>> {
  const text = await readFile(join(tree, doneMark), "utf8").catch(() => undefined);
  if (text === undefined) return {};
  let env: unknown;
  try {
    env = (JSON.parse(text) as { env?: unknown }).env;
  } catch (err) {
    throw new Error(
      `the task's built environment's record ${join(tree, doneMark)} is not JSON (${(err as Error).message}): import the task again with --build-env`,
    );
  }
  if (env === undefined) return {};
  if (typeof env !== "object" || env === null || Object.values(env).some((v) => typeof v !== "string"))
    throw new Error(
      `the task's built environment's record ${join(tree, doneMark)} has an env that is not names to strings: import the task again with --build-env`,
    );
  return env as Record<string, string>;
}

/**
 * What a container changed in its system: the files of its upper layer (directories alone are
 * left out: bwrap makes mount points), `(removed)` for overlay whiteouts (character devices 0/0),
 * caches left out (`isCachePath`), as container paths, sorted, at most `limit`. Names only:
 * nothing in the layer is read.
 */
export async function upperChanges(upper: string, limit = 20): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const names = await readdir(join(upper, rel)).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const p = `${rel}/${name}`;
      const st = await lstat(join(upper, p)).catch(() => undefined);
      if (!st) continue;
      if (st.isDirectory()) await walk(p);
      else if (!isCachePath(p)) out.push(st.isCharacterDevice() && st.rdev === 0 ? `${p} (removed)` : p);
    }
  };
  await walk("");
  return out.sort().slice(0, limit);
}

/** Caches a run leaves (Go's build cache, pip's, bytecode) that no test grades. Pure. */
export function isCachePath(p: string): boolean {
  return /(^|\/)(\.cache|__pycache__)\/|^\/var\/cache\/|\.py[co]$/.test(p);
}
