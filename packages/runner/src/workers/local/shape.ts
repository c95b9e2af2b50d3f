import { execFileSync } from "node:child_process";
import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ProfileId } from "@flakegym/profiles";
import { FlakegymError } from "../../errors.js";
import { TREE_DONE_MARK } from "../../gc/harbor-tree-use.js";
import type { ResourceLimits } from "../types.js";
import { type Bind, identityFiles } from "./bwrap-args.js";
import { createWorkerCgroup, type WorkerCgroup } from "./cgroup.js";
import {
  CONTAINER_CAPS,
  type ContainerRoot,
  containerEnv,
  containerRootOf,
  imageEnvOf,
  mountContainerRoot,
  unmountContainerRoot,
} from "./container-root.js";
import type { SandboxShape } from "./sandbox.js";
import { prepareMountPoints, ROOTFS_NODE, readSystemRoot } from "./system-root.js";
import { BASE_PATH, toolchainFor } from "./toolchain.js";

/** Where things appear inside every local sandbox. */
export const SANDBOX_PATHS = {
  workspace: "/workspace",
  deps: "/deps",
  home: "/sandbox-home",
  etc: "/etc",
} as const;
/** Where the policy gateway's unix socket appears inside a local sandbox. */
export const SANDBOX_GATEWAY_SOCKET = "/run/flakegym/gateway.sock";
/** The loopback port inside the sandbox that the supervisor forwards to the gateway socket. */
export const SANDBOX_GATEWAY_PORT = 18080;
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;

let bwrapFound: string | null | undefined;

/**
 * Path of bwrap on PATH, or undefined (checked once). `FLAKEGYM_BWRAP` overrides the lookup: a
 * path to use, or `none` to behave as if bubblewrap were missing.
 */
export function findBwrap(): string | undefined {
  const override = process.env.FLAKEGYM_BWRAP;
  if (override) return override === "none" ? undefined : override;
  if (bwrapFound === undefined) {
    try {
      bwrapFound = execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).trim() || null;
    } catch {
      bwrapFound = null;
    }
  }
  return bwrapFound ?? undefined;
}

/** The error for a machine without bubblewrap: how to install it, and the explicit escape hatch. */
export function bwrapMissingError(): FlakegymError {
  return new FlakegymError(
    "E_NO_SANDBOX",
    "bubblewrap (bwrap) is not installed, so local workers cannot be sandboxed",
    {
      hint: "install it with `sh scripts/ensure-system-deps` (or as root: apt-get install -y bubblewrap); only `flakegym snapshot build --unsafe-no-sandbox` (and the API's createLocalBackend({ unsafeNoSandbox: true })) run without isolation: rollout, eval and serve always sandbox the agent",
    },
  );
}

export interface ShapeOptions {
  /** Unique id (a cgroup name and the dir name under `stateDir`). */
  readonly id: string;
  readonly profile: ProfileId;
  /** Host dir mounted writable at /workspace. */
  readonly workspace: string;
  /** Host dir mounted writable at /deps (package caches kept with the snapshot), if any. */
  readonly deps?: string;
  /** Host dir for this sandbox's own files (passwd, home when persistent). */
  readonly stateDir: string;
  readonly limits: Pick<ResourceLimits, "memoryMb" | "pids" | "cpuSeconds" | "diskMb">;
  readonly network: "none" | "dropping" | "host";
  /** "dropping" made inside a user namespace of the runner's own (bwrap-args.ts droppingNetPrefix). */
  readonly droppingViaUserNamespace?: boolean;
  /** Extra read-only binds (node, the cline package, a gateway socket dir…). */
  readonly binds?: readonly Bind[];
  /** Read-only binds at sandbox paths inside the workspace (hidden test files of a scoring worker). */
  readonly workspaceBinds?: readonly Bind[];
  readonly env?: Readonly<Record<string, string>>;
  /** Keep HOME in `stateDir/home` (the agent's HOME survives between execs) instead of a tmpfs. */
  readonly persistentHome?: boolean;
  /** Run without bubblewrap (explicit user choice). */
  readonly unsafeNoSandbox?: boolean;
  /** Size of the private /tmp (and tmpfs HOME), MiB. */
  readonly tmpSizeMb?: number;
  /** Host dir bound at /tmp (the worker's bounded state) instead of a private tmpfs. */
  readonly tmpDir?: string;
  /**
   * A built root filesystem (a Harbor task's environment) shown as the system instead of this
   * machine's: with a root runner, as Harbor's container (a writable copy, root inside, the image's
   * ENV: container-root.ts), else read-only under the sandbox's user.
   */
  readonly systemRoot?: string;
  /** The directory commands start in when not /workspace (a Harbor task's WORKDIR, in its container). */
  readonly cwd?: string;
}

export interface PreparedShape {
  readonly shape: SandboxShape;
  readonly cgroup: WorkerCgroup;
  /** The environment inside (also used as the host env in unsafe mode). */
  readonly env: Readonly<Record<string, string>>;
  /** Host dir bound at HOME (persistent home), when there is one. */
  readonly homeDir?: string;
  /** Removes the cgroup (after killing whatever is left in it). */
  dispose(): Promise<void>;
}

/**
 * Prepares everything one sandbox needs: the worker's cgroup, identity files, toolchain binds and
 * the bwrap spec. All of the worker's processes (core, execs) share this shape and its limits.
 */
export async function prepareShape(opts: ShapeOptions): Promise<PreparedShape> {
  const bwrapPath = findBwrap();
  if (!bwrapPath && !opts.unsafeNoSandbox) throw bwrapMissingError();
  await mkdir(opts.stateDir, { recursive: true });
  const toolchain = await toolchainFor(opts.profile);
  const ids = identityFiles(SANDBOX_UID, SANDBOX_GID, SANDBOX_PATHS.home);
  const [passwd, group] = identityBinds(opts.stateDir).map((b) => b.src) as [string, string];
  await writeFile(passwd, ids.passwd);
  await writeFile(group, ids.group);
  let home: string | undefined;
  if (opts.persistentHome || opts.unsafeNoSandbox) {
    home = join(opts.stateDir, "home");
    await mkdir(home, { recursive: true });
  }
  const unsafe = !bwrapPath;
  const inside = (p: string, host: string | undefined) => (unsafe ? (host ?? p) : p);
  const env: Record<string, string> = {
    PATH: unsafe ? (process.env.PATH ?? BASE_PATH.join(":")) : [...toolchain.path, ...BASE_PATH].join(":"),
    HOME: inside(SANDBOX_PATHS.home, home),
    USER: "agent",
    LOGNAME: "agent",
    LANG: "C.UTF-8",
    TMPDIR: "/tmp",
    TERM: "dumb",
    ...(opts.deps ? depsEnv(inside(SANDBOX_PATHS.deps, opts.deps), { venv: await hasVenv(opts.deps) }) : {}),
    ...(opts.network !== "host" ? OFFLINE_ENV : {}),
    ...opts.env,
  };
  if (opts.deps)
    env.PATH = [...depsPath(inside(SANDBOX_PATHS.deps, opts.deps), opts.profile), env.PATH].join(":");
  const root = opts.systemRoot && !unsafe ? await readSystemRoot(opts.systemRoot) : undefined;
  const container = root && process.geteuid?.() === 0 ? await containerOf(root.dir, opts, env) : undefined;
  // the runner's node (the Cline core) under this machine's /usr is not in the tree: bound beside it
  const rootNode: Bind[] =
    root && process.execPath.startsWith("/usr/") ? [{ src: process.execPath, dest: ROOTFS_NODE }] : [];
  const cgroup = await createWorkerCgroup(opts.id, {
    memoryMb: opts.limits.memoryMb,
    pids: opts.limits.pids,
  });
  const shape: SandboxShape = {
    bwrap: unsafe
      ? undefined
      : {
          workspace: opts.workspace,
          workspaceDest: SANDBOX_PATHS.workspace,
          ...(home ? { home } : {}),
          homeDest: SANDBOX_PATHS.home,
          tmpSizeMb: opts.tmpSizeMb ?? 512,
          ...(opts.tmpDir ? { tmp: opts.tmpDir } : {}),
          binds: [
            // a container keeps its image's users (useradd, setpriv --reuid=N work on them)
            ...(container ? [] : identityBinds(opts.stateDir)),
            ...toolchain.binds,
            ...(opts.deps ? [{ src: opts.deps, dest: SANDBOX_PATHS.deps, rw: true }] : []),
            ...(opts.network === "host" ? HOST_NET_BINDS : []),
            ...(opts.binds ?? []),
            ...rootNode,
          ],
          ...(opts.workspaceBinds?.length ? { workspaceBinds: opts.workspaceBinds } : {}),
          env: container?.env ?? env,
          cwd: container ? (opts.cwd ?? SANDBOX_PATHS.workspace) : SANDBOX_PATHS.workspace,
          uid: container ? 0 : SANDBOX_UID,
          gid: container ? 0 : SANDBOX_GID,
          hostname: "flakegym",
          network: opts.network,
          ...(container
            ? { container: { root: container.root.merged, caps: CONTAINER_CAPS } }
            : root
              ? { systemRoot: root }
              : {}),
          ...(opts.droppingViaUserNamespace ? { droppingViaUserNamespace: true } : {}),
        },
    cgroup,
    ...(bwrapPath ? { bwrapPath } : {}),
    rlimits: {
      // RLIMIT_CPU is per process: a backstop a little above the budget, which the worker's
      // watchdog enforces on the whole cgroup (so the end is reported as cpu_time).
      ...(opts.limits.cpuSeconds !== undefined
        ? { cpuSeconds: opts.limits.cpuSeconds + Math.max(2, Math.ceil(opts.limits.cpuSeconds * 0.05)) }
        : {}),
      ...(opts.limits.diskMb !== undefined ? { fileSizeMb: opts.limits.diskMb } : {}),
      ...(cgroup.kind === "none" ? { nproc: opts.limits.pids, dataMb: opts.limits.memoryMb } : {}),
    },
  };
  if (container) await mountContainerRoot(container.root).catch(failWith(cgroup));
  else if (root && shape.bwrap) await prepareMountPoints(root, rootMounts(shape.bwrap));
  const dispose = async () => {
    if (container) await unmountContainerRoot(container.root);
    await cgroup.remove();
  };
  return { shape, cgroup, env: container?.env ?? env, ...(home ? { homeDir: home } : {}), dispose };
}

/** The sandbox user's passwd and group files (in its state dir) over the system's. Pure. */
const identityBinds = (stateDir: string): Bind[] => [
  { src: join(stateDir, "passwd"), dest: "/etc/passwd" },
  { src: join(stateDir, "group"), dest: "/etc/group" },
];

/** What a sandbox on the host's network sees of its name resolution. */
const HOST_NET_BINDS: readonly Bind[] = [
  { src: "/etc/resolv.conf", dest: "/etc/resolv.conf", optional: true },
  { src: "/etc/hosts", dest: "/etc/hosts", optional: true },
];

/** Removes the cgroup made so far and rethrows. */
const failWith = (cgroup: WorkerCgroup) => async (err: unknown) => {
  await cgroup.remove().catch(() => {});
  throw err;
};

/** A Harbor container's root (an overlay in the sandbox's state dir) and environment (the image's ENV). */
async function containerOf(
  tree: string,
  opts: ShapeOptions,
  env: Readonly<Record<string, string>>,
): Promise<{ root: ContainerRoot; env: Record<string, string> }> {
  return {
    root: containerRootOf(tree, join(opts.stateDir, "root")),
    env: containerEnv(env, await imageEnvOf(tree, TREE_DONE_MARK), opts.env ?? {}),
  };
}

/** Every bind of a sandbox over a built root filesystem, for its mount points. Pure. */
function rootMounts(b: NonNullable<SandboxShape["bwrap"]>): Bind[] {
  return [
    ...b.binds,
    ...(b.workspaceBinds ?? []),
    { src: b.workspace, dest: b.workspaceDest },
    ...(b.home ? [{ src: b.home, dest: b.homeDest }] : []),
  ];
}

/**
 * Package managers told not to reach for the network (sandboxes after the snapshot build's install
 * step have none): they fail at once instead of waiting on a connection.
 */
export const OFFLINE_ENV: Readonly<Record<string, string>> = {
  CARGO_NET_OFFLINE: "true",
  GOPROXY: "off",
  GOSUMDB: "off",
  PIP_NO_INDEX: "1",
  npm_config_offline: "true",
};

/** Where the python profile's venv lives inside a snapshot's deps dir. */
export const VENV_DIR = "venv";

/** Whether a snapshot's deps dir (host path) holds the python venv its install made. */
export async function hasVenv(hostDeps: string): Promise<boolean> {
  return (await stat(join(hostDeps, VENV_DIR, "bin", "python")).catch(() => undefined)) !== undefined;
}

/**
 * PATH entries (first) for what a snapshot's install put in its deps dir: the python venv's bin, for
 * every python worker — a pooled worker boots before the fork it adopts is bound, so whether the
 * venv exists is not known then (a missing directory on PATH is skipped). Pure.
 */
export function depsPath(deps: string, profile: ProfileId): string[] {
  return profile === "python" ? [`${deps}/${VENV_DIR}/bin`] : [];
}

/**
 * Package-manager caches kept in the snapshot's deps dir, so offline workers find them; with
 * `venv`, the python venv the install made is the active one (VIRTUAL_ENV; callers put its bin first
 * on PATH).
 */
export function depsEnv(deps: string, o: { venv?: boolean } = {}): Record<string, string> {
  return {
    ...(o.venv ? { VIRTUAL_ENV: `${deps}/${VENV_DIR}` } : {}),
    // the deps dir itself: a dataset row's Python environment lives in `$FLAKEGYM_DEPS/venv` (tasks/swebench-env-specs.ts)
    FLAKEGYM_DEPS: deps,
    CARGO_HOME: `${deps}/cargo`,
    npm_config_cache: `${deps}/npm`,
    PIP_CACHE_DIR: `${deps}/pip`,
    GOMODCACHE: `${deps}/go/mod`,
    GOPATH: `${deps}/go`,
    // the build cache the snapshot's install warmed (else every worker compiles the standard library)
    GOCACHE: `${deps}/go/cache`,
  };
}
