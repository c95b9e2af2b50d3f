/**
 * The bubblewrap command line for one sandbox, built as a pure function of a spec so it can be
 * unit-tested and printed (`describe`). The shape: the system and toolchain read-only, the
 * workspace writable, private /tmp and HOME, every namespace unshared, all capabilities dropped,
 * no network at all (the policy gateway comes in as a bound unix socket).
 */

/** One bind mount: host `src` at sandbox `dest`. */
export interface Bind {
  readonly src: string;
  readonly dest: string;
  /** Writable bind (default read-only). */
  readonly rw?: boolean;
  /** Skip silently when `src` does not exist (`--ro-bind-try`). */
  readonly optional?: boolean;
}

export interface BwrapSpec {
  /** Host directory mounted writable at `workspaceDest`. */
  readonly workspace: string;
  readonly workspaceDest: string;
  /** Host directory for HOME (writable), or a size-limited tmpfs when absent. */
  readonly home?: string;
  readonly homeDest: string;
  /** Size of the private /tmp (and of HOME when it is a tmpfs), MiB. */
  readonly tmpSizeMb: number;
  /** Host directory bound at /tmp (a bounded dir the host can measure), else a private tmpfs. */
  readonly tmp?: string;
  /** Read-only toolchain / runtime binds beyond the base system. */
  readonly binds: readonly Bind[];
  /** Binds inside the workspace (after it is mounted): the scoring worker's read-only hidden test files. */
  readonly workspaceBinds?: readonly Bind[];
  /** Environment inside (the sandbox starts from an empty environment). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** uid/gid inside the sandbox's user namespace (mapped to the caller outside). */
  readonly uid: number;
  readonly gid: number;
  readonly hostname: string;
  /**
   * The command is the pid namespace's PID 1 (no bwrap init): bwrap's init holds the command's
   * stdout and is dumpable, so a process of the sandbox's uid could open it (a scoring exec's
   * channel, scoring/script-seal.ts). Orphans then wait for the command's end to be reaped, and
   * every process left dies with it.
   */
  readonly asPid1?: boolean;
  /**
   * The scorer and the code under test as two users (issue 42): the sandbox's user namespace is
   * made beforehand by {@link apartPrefix} (root 0 for the scorer, `uid` for the code, each a
   * different user outside), bwrap joins it instead of making its own, and the command keeps the
   * capabilities {@link SCORER_CAPS} it needs to run the code as `uid` (scoring/script-seal.ts).
   */
  readonly apart?: { readonly runnerUid: number; readonly runnerGid: number };
  /**
   * "none": a new network namespace with only loopback. "dropping": the same, made by
   * {@link DROPPING_NET_PREFIX} before bwrap, where a connect to a non-local address is silently
   * dropped (it times out) rather than refused as unreachable. "host": share the host's network.
   */
  readonly network: "none" | "dropping" | "host";
  /**
   * A root filesystem (a Harbor task's environment built from its Dockerfile) whose top-level
   * entries replace this machine's system binds; absent: the host's /usr and /etc parts.
   */
  readonly systemRoot?: SystemRoot;
  /** "dropping" made inside a user namespace of the runner's own (a runner without root). */
  readonly droppingViaUserNamespace?: boolean;
  /**
   * A Harbor task's container (workers/local/container-root.ts): `root`, the overlay of its built
   * tree, bound writable at `/` in place of the system binds; the user namespace is
   * `containerPrefix`'s (users 0..65535 as themselves), bwrap joins it as root and keeps
   * CONTAINER_CAPS. Excludes `apart` and `systemRoot`.
   */
  readonly container?: { readonly root: string; readonly caps: readonly string[] };
}

/**
 * Whether a sandbox of this shape may run as two users (the watcher apart from the code it runs:
 * agent-apart.ts for the agent, exec.ts for scoring). A Harbor container is one user's: Harbor runs
 * its agent as the container's user and its verifier in the same container after the agent, so
 * both see one user's processes. The one place this is decided. Pure.
 */
export const mayRunApart = (bwrap: Pick<BwrapSpec, "container">): boolean => bwrap.container === undefined;

/** One top-level entry of a root filesystem. */
export interface RootEntry {
  readonly name: string;
  readonly kind: "dir" | "file" | "symlink";
  /** A symbolic link's target (kept as is: relative ones stay inside the tree). */
  readonly target?: string;
}

/** A built root filesystem: its host directory and its top-level entries (read once at worker start). */
export interface SystemRoot {
  readonly dir: string;
  readonly entries: readonly RootEntry[];
}

/** Top-level names bwrap makes itself (proc, dev, a private /tmp) or that no sandbox shows. */
const ROOT_SKIP = new Set(["proc", "dev", "sys", "tmp", "run", "lost+found", ".flakegym-rootfs.json"]);

/** The binds and symlinks that show a root filesystem's entries read-only at /. Pure. */
export function systemRootArgs(root: SystemRoot): string[] {
  const a: string[] = [];
  for (const e of root.entries) {
    if (ROOT_SKIP.has(e.name) || e.name.includes("/")) continue;
    if (e.kind === "symlink") a.push("--symlink", e.target!, `/${e.name}`);
    else a.push("--ro-bind", `${root.dir}/${e.name}`, `/${e.name}`);
  }
  return a;
}

/**
 * The bind destinations that need a directory made inside a root filesystem's read-only entries
 * before the sandbox starts (bwrap cannot make a mount point inside a read-only bind): each dest
 * under an entry that is a directory there, as a path relative to the tree. Pure.
 */
export function mountPointsIn(root: SystemRoot, dests: readonly string[]): string[] {
  const dirs = new Set(
    root.entries.filter((e) => e.kind === "dir" && !ROOT_SKIP.has(e.name)).map((e) => e.name),
  );
  return [...new Set(dests.filter((d) => dirs.has(d.split("/")[1] ?? "")).map((d) => d.replace(/^\/+/, "")))];
}

/** The shell step of the dropping namespace: loopback up and the default route on it, or exit 125. */
const ROUTE_TO_LOOPBACK =
  'PATH="$PATH:/usr/sbin:/sbin"; { ip link set lo up && ip route add default dev lo; } || { echo "flakegym: could not route the scoring sandbox\'s network namespace to loopback (ip route add default dev lo)" >&2; exit 125; }; exec "$@"';

/**
 * The host command bwrap runs under for `network: "dropping"`: a new network namespace whose
 * default route is the loopback device, so packets to other addresses go nowhere and a connect
 * waits for its timeout — the shape tests written for a networked harness expect (requests'
 * `TestTimeout` connects to 10.255.255.1 and wants a connect timeout; in a loopback-only
 * namespace it gets ENETUNREACH at once). Loopback itself behaves as in "none". Root makes the
 * namespace directly; a runner without root makes it inside a user namespace of its own
 * (`--user --map-root-user`: it owns that network namespace, so it may route it), and bwrap then
 * runs as that namespace's root, which is the runner's own uid outside. Runs outside the
 * sandbox; nothing of the workspace reaches it. Pure.
 */
export function droppingNetPrefix(viaUserNamespace: boolean): readonly string[] {
  return [
    "unshare",
    ...(viaUserNamespace ? ["--user", "--map-root-user"] : []),
    "--net",
    "--",
    "/bin/sh",
    "-c",
    ROUTE_TO_LOOPBACK,
    "flakegym-net",
  ];
}

/** The dropping namespace as root makes it. */
export const DROPPING_NET_PREFIX: readonly string[] = droppingNetPrefix(false);

/** Host paths of the base system, bound read-only. Debian's merged /usr: /bin etc. are symlinks. */
export const SYSTEM_BINDS: readonly Bind[] = [
  { src: "/usr", dest: "/usr" },
  { src: "/etc/alternatives", dest: "/etc/alternatives", optional: true },
  { src: "/etc/ld.so.cache", dest: "/etc/ld.so.cache", optional: true },
  { src: "/etc/ld.so.conf", dest: "/etc/ld.so.conf", optional: true },
  { src: "/etc/ld.so.conf.d", dest: "/etc/ld.so.conf.d", optional: true },
  { src: "/etc/localtime", dest: "/etc/localtime", optional: true },
  { src: "/etc/ssl", dest: "/etc/ssl", optional: true },
  { src: "/etc/ca-certificates", dest: "/etc/ca-certificates", optional: true },
  { src: "/etc/nsswitch.conf", dest: "/etc/nsswitch.conf", optional: true },
];

/** Top-level symlinks of a merged-/usr system, recreated inside. */
export const SYSTEM_SYMLINKS: readonly { readonly target: string; readonly dest: string }[] = [
  { target: "usr/bin", dest: "/bin" },
  { target: "usr/sbin", dest: "/sbin" },
  { target: "usr/lib", dest: "/lib" },
  { target: "usr/lib64", dest: "/lib64" },
];

function bindArgs(b: Bind): string[] {
  const flag = b.rw ? (b.optional ? "--bind-try" : "--bind") : b.optional ? "--ro-bind-try" : "--ro-bind";
  return [flag, b.src, b.dest];
}

/**
 * /dev/shm as on any Linux system: a tmpfs of its own, mode 1777 (every user may create, none may
 * remove another's). bwrap's `--dev` leaves it a directory of root's, mode 755: in the two-user
 * scoring sandbox (apart) the code under test is not root, so every POSIX semaphore or shared
 * memory it makes is refused — Python's `multiprocessing.Lock()` raises PermissionError, and a
 * real row's tests that lint or test with two processes (pylint-4661's `jobs=2`) failed at scoring
 * only, gold included. Its pages are charged to the worker's memory like /tmp's. Pure.
 */
export const SHM_ARGS = (bytes: string): string[] => [
  "--perms",
  "1777",
  "--size",
  bytes,
  "--tmpfs",
  "/dev/shm",
];

/** bwrap's arguments (without the command): everything after `bwrap` and before `--`. */
export function buildBwrapArgs(spec: BwrapSpec): string[] {
  if (spec.container) return containerArgs(spec, spec.container);
  const a: string[] = [
    // apart: the user namespace is the prefix's (root inside: bwrap runs privileged in it)
    ...(spec.apart ? [] : ["--unshare-user", "--uid", String(spec.uid), "--gid", String(spec.gid)]),
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--hostname",
    spec.hostname,
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    // bwrap can only forbid user namespaces in one it made: apart, the prefix forbids them
    ...(spec.apart ? SCORER_CAPS.flatMap((c) => ["--cap-add", c]) : ["--disable-userns"]),
    ...(spec.asPid1 ? SCORING_INIT_ARGS : []),
  ];
  // "dropping": the namespace is already new (DROPPING_NET_PREFIX), bwrap stays in it
  if (spec.network === "none") a.push("--unshare-net");
  if (spec.apart) a.push(...openParents(spec, "system"));
  if (spec.systemRoot) a.push(...systemRootArgs(spec.systemRoot));
  else {
    for (const b of SYSTEM_BINDS) a.push(...bindArgs(b));
    for (const s of SYSTEM_SYMLINKS) a.push("--symlink", s.target, s.dest);
  }
  const tmpBytes = String(spec.tmpSizeMb * 1024 * 1024);
  a.push("--proc", "/proc", "--dev", "/dev", ...SHM_ARGS(tmpBytes));
  if (spec.tmp) a.push("--bind", spec.tmp, "/tmp");
  else a.push("--size", tmpBytes, "--tmpfs", "/tmp");
  for (const b of spec.binds) a.push(...bindArgs(b));
  if (spec.home) a.push("--bind", spec.home, spec.homeDest);
  else a.push("--size", tmpBytes, "--tmpfs", spec.homeDest);
  a.push("--bind", spec.workspace, spec.workspaceDest);
  if (spec.apart) a.push(...openParents(spec, "workspace"));
  for (const b of spec.workspaceBinds ?? []) a.push(...bindArgs(b));
  // Everything not bound writable above (the root tmpfs bwrap builds, /etc, /opt …) is read-only.
  a.push("--remount-ro", "/");
  a.push("--chdir", spec.cwd, "--clearenv");
  for (const [k, v] of Object.entries(spec.env)) a.push("--setenv", k, v);
  return a;
}

/**
 * bwrap's arguments for a Harbor container: the namespace is the prefix's (bwrap root in it), the
 * writable overlay at /, then the same /proc, /dev, /tmp, binds, HOME and workspace as any sandbox;
 * nothing remounted read-only (Harbor's container is writable, and thrown away). Pure.
 */
function containerArgs(spec: BwrapSpec, c: NonNullable<BwrapSpec["container"]>): string[] {
  const a = [
    ...["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"],
    ...["--hostname", spec.hostname, "--die-with-parent", "--new-session", "--cap-drop", "ALL"],
    ...c.caps.flatMap((x) => ["--cap-add", x]),
    ...(spec.asPid1 ? SCORING_INIT_ARGS : []),
  ];
  if (spec.network === "none") a.push("--unshare-net");
  a.push("--bind", c.root, "/", "--proc", "/proc", "--dev", "/dev");
  if (spec.tmp) a.push("--bind", spec.tmp, "/tmp");
  else a.push("--size", String(spec.tmpSizeMb * 1024 * 1024), "--tmpfs", "/tmp");
  for (const b of spec.binds) a.push(...bindArgs(b));
  if (spec.home) a.push("--bind", spec.home, spec.homeDest);
  a.push("--bind", spec.workspace, spec.workspaceDest);
  for (const b of spec.workspaceBinds ?? []) a.push(...bindArgs(b));
  a.push("--chdir", spec.cwd, "--clearenv");
  for (const [k, v] of Object.entries(spec.env)) a.push("--setenv", k, v);
  return a;
}

/** /etc/passwd and /etc/group contents naming the sandbox user, so tools that look it up work. */
export function identityFiles(uid: number, gid: number, home: string): { passwd: string; group: string } {
  return {
    passwd: `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nagent:x:${uid}:${gid}:agent:${home}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nagent:x:${gid}:\nnogroup:x:65534:\n`,
  };
}

/**
 * The dirs bwrap makes on the way to each mount point, made first and searchable by everyone
 * (`--perms 0755 --dir`): as root of its namespace bwrap makes them 0700 and root's (in a sandbox
 * of one user they are that user's), which the code under test of an apart sandbox, another user,
 * could not enter (`/etc/gitconfig`, a toolchain under root's pyenv, the dir of a hidden test
 * file bound into the workspace). `system`: every bind's but the workspace's own; `workspace`: the
 * dirs below the workspace of the binds into it, 0777 (an existing dir stays as it is). Pure.
 */
export function openParents(spec: BwrapSpec, where: "system" | "workspace"): string[] {
  const dests =
    where === "workspace"
      ? (spec.workspaceBinds ?? []).map((b) => b.dest)
      : [
          ...(spec.systemRoot ? [] : SYSTEM_BINDS.map((b) => b.dest)),
          ...spec.binds.map((b) => b.dest),
          spec.homeDest,
          spec.workspaceDest,
        ];
  // in the workspace (bound already): only the dirs below it
  const floor = where === "workspace" ? spec.workspaceDest.split("/").filter(Boolean).length + 1 : 1;
  const parents = new Set<string>();
  for (const d of dests) {
    const parts = d.split("/").filter(Boolean);
    for (let i = floor; i < parts.length; i++) parents.add(`/${parts.slice(0, i).join("/")}`);
  }
  const byDepth = [...parents].sort(
    (x, y) => x.split("/").length - y.split("/").length || x.localeCompare(y),
  );
  // in the workspace, writable by the code too, as a dir of the one-user sandbox's own would be
  const perms = where === "workspace" ? "0777" : "0755";
  return byDepth.flatMap((p) => ["--perms", perms, "--dir", p]);
}

/** bwrap's arguments that make the command PID 1 (`BwrapSpec.asPid1`), as scoring execs run. */
export const SCORING_INIT_ARGS: readonly string[] = ["--as-pid-1"];

/**
 * What the scorer keeps in an apart sandbox: run the code as its user (SETUID, SETGID), end what
 * it left (KILL), and read, install and reset files in the code's workspace and /tmp (CHOWN,
 * DAC_OVERRIDE, FOWNER). The code runs with none (`setpriv --no-new-privs`, scoring/script-seal.ts).
 */
export const SCORER_CAPS = [
  "CAP_CHOWN",
  "CAP_DAC_OVERRIDE",
  "CAP_FOWNER",
  "CAP_KILL",
  "CAP_SETGID",
  "CAP_SETUID",
] as const;

/**
 * The host user the scorer is outside an apart sandbox: one no file of the host's and no other
 * sandbox user is (the bound hidden test files are nobody's, 65534: unmapped there too).
 */
export const SCORER_HOST_UID = 2_147_483_632;

/** The user namespace's map of an apart sandbox: the scorer root, the code the runner's own id. Pure. */
export function apartIdMap(sandboxId: number, runnerId: number): string {
  return `0 ${SCORER_HOST_UID} 1\n${sandboxId} ${runnerId} 1\n`;
}

/**
 * The host command an apart sandbox's bwrap runs under (root only: a map of two users is
 * privileged): `unshare --user --keep-caps` makes the namespace, a child writes its uid and gid
 * maps ({@link apartIdMap}: one write each) once it is there, and the command then becomes the
 * namespace's root with `setpriv` before bwrap (which, root there, joins it and makes the rest).
 * No user namespace can be made below it (`user.max_user_namespaces` 0 in it: what bwrap's
 * `--disable-userns` does in one it made): the code cannot enter one to mount over a hidden file.
 * Runs outside the sandbox; nothing of the workspace reaches it. Exit 125: no namespace. Pure.
 */
export function apartPrefix(
  uid: number,
  gid: number,
  runnerUid: number,
  runnerGid: number,
): readonly string[] {
  const maps = `printf '${apartIdMap(uid, runnerUid)}' > "$d/u" && printf '${apartIdMap(gid, runnerGid)}' > "$d/g"`;
  return [
    "/bin/sh",
    "-c",
    [
      'd=$(mktemp -d) && mkfifo "$d/go" || exit 125',
      maps,
      "me=$$",
      // the child waits (≤ 10 s) until the parent's exec below is in its new user namespace, then
      // writes "ok" into the fifo after both maps (nothing: the parent ends with 125)
      '( n=0; while [ "$(readlink /proc/$me/ns/user)" = "$(readlink /proc/self/ns/user)" ] && [ $n -lt 2000 ]; do n=$((n + 1)); sleep 0.005; done',
      '  { cat "$d/u" > /proc/$me/uid_map && cat "$d/g" > /proc/$me/gid_map && echo ok; } > "$d/go" ) < /dev/null > /dev/null 2>&1 &',
      `exec unshare --user --keep-caps -- /bin/sh -c 'read x < "$0/go"; rm -rf "$0"; [ "$x" = ok ] || { echo "flakegym: could not map the two users of the scoring sandbox (uid_map, gid_map)" >&2; exit 125; }; echo 0 > /proc/sys/user/max_user_namespaces || { echo "flakegym: could not forbid user namespaces in the scoring sandbox" >&2; exit 125; }; exec setpriv --reuid=0 --regid=0 --clear-groups -- "$@"' "$d" "$@"`,
    ].join("\n"),
    "flakegym-apart",
  ];
}
