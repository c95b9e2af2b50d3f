import { randomBytes } from "node:crypto";
import { chown, mkdir, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type ClinePackage,
  launchClineCore,
  resolveClinePackage,
  SUPERVISOR_PATH,
} from "@flakegym/cline-vendor";
import { execa } from "execa";
import { FlakegymError } from "../../errors.js";
import { PODMAN_OWNER_LABEL } from "../../gc/inventory.js";
import { ownerTag, selfOwner, writeOwnerRecord } from "../../gc/owner.js";
import {
  type BoundedDirs,
  filesystemFull,
  fsEnforcesQuota,
  makeBoundedDirs,
  removeWorkerDir,
  unboundedDiskOver,
} from "../bounded-dirs.js";
import { execTimeoutMs, stoppedExecResult } from "../exec-budget.js";
import { collectHostArtifacts } from "../host-artifacts.js";
import { EXEC_ONLY_INIT } from "../exec-only-init.js";
import { exitWithin } from "../exit-within.js";
import { execLimitOf } from "../limit-verdict.js";
import type { Bind } from "../local/bwrap-args.js";
import { type CgroupDirs, cgroupDirsAt, readLimitEvents, readUsage } from "../local/cgroup.js";
import {
  depsEnv,
  depsPath,
  hasVenv,
  OFFLINE_ENV,
  SANDBOX_GATEWAY_PORT,
  SANDBOX_GATEWAY_SOCKET,
  SANDBOX_PATHS,
} from "../local/shape.js";
import { nodeBinds } from "../local/toolchain.js";
import { workspaceRelative } from "../read-only-files.js";
import { unixSocketPath } from "../socket-path.js";
import type {
  CollectArtifactsInput,
  ExecOptions,
  ExecResult,
  Worker,
  WorkerBackend,
  WorkerExit,
  WorkerSpec,
} from "../types.js";
import { conmonOomMarkerIn, containerExitOf, killedFromOutside, parseExitState } from "./container-exit.js";
import { clinePackageInImage, ImageConfig, imageClineOf } from "./image-cline.js";

/**
 * The podman backend: one OCI container per worker, from a locally present image (built by the
 * flake and `podman load`ed, or `podman import`ed). No registry is contacted (`--pull never`).
 * Runs with runc and a project-owned containers.conf (`default_ulimits = []`: raising
 * RLIMIT_NOFILE/NPROC fails without CAP_SYS_RESOURCE here) passed through CONTAINERS_CONF.
 */
export interface PodmanBackendOptions {
  /** Image for workers whose spec names none. */
  readonly image?: string;
  /** OCI runtime; crun fails on hybrid cgroups (FACTS §1). Default /usr/sbin/runc. */
  readonly runtime?: string;
  readonly podmanPath?: string;
  /** Where containers.conf and per-worker files go. Default `<tmpdir>/flakegym-podman`. */
  readonly stateDir?: string;
  /** Extra read-only binds (e.g. host /usr when the image has no toolchain, node and the cline package). */
  readonly binds?: readonly Bind[];
  /**
   * Size of the worker's own state, MiB: /tmp, HOME and the agent's config and socket dirs share
   * one host tmpfs bound in (root); without mount rights /tmp and HOME are podman tmpfs mounts of
   * this size each. Default 512.
   */
  readonly tmpSizeMb?: number;
  /** How often CPU time and (without an fs quota) disk use are checked, ms (default 1000). */
  readonly watchdogIntervalMs?: number;
  /** The node binary inside the image, for the agent's supervisor. Default: the runner's own path. */
  readonly nodeInImage?: string;
  /** Bound on spawn → core answering gRPC for agent workers. Default 120 s. */
  readonly agentStartTimeoutMs?: number;
  /** Directories (container paths) put before the standard PATH (e.g. a node bound outside /usr). */
  readonly pathPrefix?: readonly string[];
  /**
   * Before the first worker, `podman import` {@link BASE_IMAGE} (a minimal rootfs: merged-/usr
   * symlinks, passwd, empty mount points) unless it is present. Used with the host's /usr bound in
   * as the toolchain ({@link hostToolchainPodmanOptions}).
   */
  readonly importBaseImage?: boolean;
  /**
   * Workers run on images with their own toolchain, Node and Cline core (the flake's images,
   * `rollout --images nix`): the agent runs the image's node ({@link nodeInImage}, default
   * /bin/node) and core (the image's FLAKEGYM_CLINE_DIR, same version as the runner's); of the
   * runner only the supervisor script is bound in.
   */
  readonly clineFromImage?: boolean;
}

/** Podman options for the flake's images (`rollout --images nix`); the image comes with each worker spec. */
export function flakeImagePodmanOptions(): PodmanBackendOptions {
  return { clineFromImage: true, nodeInImage: "/bin/node" };
}

/** The minimal image `importBaseImage` creates locally (no registry): a rootfs without /usr. */
export const BASE_IMAGE = "localhost/flakegym-base:2";

/**
 * Podman options that run workers from {@link BASE_IMAGE} with this machine's /usr bound read-only
 * as the toolchain, and the runner's node bound at /opt/node when it lives outside /usr — the same
 * toolchain the local backend's bubblewrap sandboxes see.
 */
export function hostToolchainPodmanOptions(execPath: string = process.execPath): PodmanBackendOptions {
  const node = nodeBinds(execPath);
  return {
    image: BASE_IMAGE,
    importBaseImage: true,
    binds: [{ src: "/usr", dest: "/usr" }, ...node.binds],
    ...(node.path.length ? { pathPrefix: node.path, nodeInImage: `${node.path[0]}/node` } : {}),
  };
}

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
  await execa("tar", ["--numeric-owner", "-C", root, "-cf", `${tar}.tmp`, "."], { stdin: "ignore" });
  await rename(`${tar}.tmp`, tar);
  await rm(root, { recursive: true, force: true });
  return tar;
}

export const CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n";

function sanitize(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40);
}

/** The `podman run` arguments for one worker (pure). */
export function podmanRunArgs(
  spec: WorkerSpec,
  o: {
    name: string;
    image: string;
    runtime: string;
    binds: readonly Bind[];
    tmpSizeMb: number;
    env: Record<string, string>;
    /** uid:gid to run as: the workspace's owner, so it can write its workspace without chown. */
    user: string;
    /**
     * PID 1's command; default {@link EXEC_ONLY_INIT}: a loop that only waits (commands arrive with
     * `podman exec`) and that nothing inside can end.
     */
    command?: readonly string[];
    /** Run in the foreground with stdin attached (the agent's supervisor) instead of `--detach`. */
    foreground?: boolean;
    /** Host dirs bound at /tmp and HOME (a bounded tmpfs), instead of podman tmpfs mounts. */
    state?: { tmp: string; home: string };
    /** The owner tag labelled on the container (`flakegym gc`). */
    owner?: string;
  },
): string[] {
  const l = spec.limits;
  const a = [
    "run",
    ...(o.foreground ? ["--rm", "--interactive"] : ["--detach"]),
    "--name",
    o.name,
    "--pull",
    "never",
    "--runtime",
    o.runtime,
    "--network",
    "none",
    "--cap-drop",
    "all",
    "--security-opt",
    "no-new-privileges",
    "--read-only",
    "--pids-limit",
    String(l.pids),
    "--memory",
    `${l.memoryMb}m`,
    "--memory-swap",
    `${l.memoryMb}m`,
    "--user",
    o.user,
    "--hostname",
    "flakegym",
    ...(o.state
      ? ["--volume", `${o.state.tmp}:/tmp:rw`, "--volume", `${o.state.home}:${SANDBOX_PATHS.home}:rw`]
      : [
          "--tmpfs",
          `/tmp:rw,size=${o.tmpSizeMb}m,mode=1777`,
          "--tmpfs",
          // podman 4.3's --tmpfs has no uid= option: a sticky world-writable HOME (one user inside).
          `${SANDBOX_PATHS.home}:rw,size=${o.tmpSizeMb}m,mode=1777`,
        ]),
    "--volume",
    `${spec.workspace}:${SANDBOX_PATHS.workspace}:rw`,
    "--workdir",
    SANDBOX_PATHS.workspace,
    "--label",
    "flakegym.worker=1",
    ...(o.owner ? ["--label", `${PODMAN_OWNER_LABEL}=${o.owner}`] : []),
  ];
  if (spec.depsDir) a.push("--volume", `${spec.depsDir}:${SANDBOX_PATHS.deps}:rw`);
  for (const f of spec.readOnlyFiles ?? [])
    a.push("--volume", `${f.hostPath}:${SANDBOX_PATHS.workspace}/${workspaceRelative(f.path)}:ro`);
  // No --ulimit: with any --ulimit podman 4.3 also raises RLIMIT_NOFILE/NPROC, which fails here
  // (no CAP_SYS_RESOURCE). CPU time is lowered per exec with `ulimit -t`; disk is bounded by the
  // fork's quota.
  for (const b of o.binds) a.push("--volume", `${b.src}:${b.dest}:${b.rw ? "rw" : "ro"}`);
  for (const [k, v] of Object.entries(o.env)) a.push("--env", `${k}=${v}`);
  a.push(o.image, ...(o.command ?? EXEC_ONLY_INIT));
  return a;
}

export function createPodmanBackend(options: PodmanBackendOptions = {}): WorkerBackend {
  const stateDir = options.stateDir ?? join(tmpdir(), "flakegym-podman");
  const podman = options.podmanPath ?? "podman";
  const runtime = options.runtime ?? "/usr/sbin/runc";
  const confFile = join(stateDir, "containers.conf");
  let confReady: Promise<void> | undefined;
  const ensureConf = () => {
    confReady ??= (async () => {
      await mkdir(stateDir, { recursive: true });
      await writeFile(`${confFile}.tmp`, CONTAINERS_CONF);
      await rename(`${confFile}.tmp`, confFile);
    })();
    return confReady;
  };
  let imageReady: Promise<void> | undefined;
  const ensureBaseImage = () => {
    imageReady ??= (async () => {
      if ((await pm(["image", "exists", BASE_IMAGE])).exitCode === 0) return;
      const dir = join(stateDir, `base-${randomBytes(3).toString("hex")}`);
      await mkdir(dir, { recursive: true });
      try {
        const tar = await writeBaseRootfs(dir);
        const r = await pm(["import", tar, BASE_IMAGE]);
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
    })();
    imageReady.catch(() => {
      imageReady = undefined; // a later worker retries
    });
    return imageReady;
  };
  const pm = async (args: string[], o: { timeoutMs?: number; signal?: AbortSignal; cwd?: string } = {}) => {
    await ensureConf();
    return await execa(podman, args, {
      reject: false,
      stripFinalNewline: false,
      timeout: o.timeoutMs ?? 120_000,
      env: { CONTAINERS_CONF: confFile },
      // conmon writes files (an `oom` marker) into its cwd: never the runner's
      cwd: o.cwd ?? stateDir,
      stdin: "ignore",
      ...(o.signal ? { cancelSignal: o.signal } : {}),
    });
  };

  return {
    kind: "podman",
    async describe() {
      const v = await pm(["version", "--format", "{{.Client.Version}}"]).catch(() => undefined);
      return {
        podman: v?.exitCode === 0 ? v.stdout.trim() : "missing",
        runtime,
        containersConf: confFile,
        image: options.image ?? "(per worker spec)",
      };
    },
    async start(spec, signal) {
      signal?.throwIfAborted();
      const image = spec.image ?? options.image;
      if (!image) {
        throw new FlakegymError("E_PODMAN", "no image for the podman worker", {
          hint: "pass an image (WorkerSpec.image or createPodmanBackend({ image })); load it first with `podman load` or `podman import`",
        });
      }
      if (spec.agent && !spec.gateway.socketPath) {
        throw new FlakegymError(
          "E_WORKER_SPEC",
          "a podman agent worker needs the policy gateway's unix socket (gateway.socketPath)",
          {
            hint: "containers run with --network none: the gateway's socket is bound in and forwarded inside",
          },
        );
      }
      if (options.importBaseImage && image === BASE_IMAGE) await ensureBaseImage();
      const name = `flakegym-${sanitize(`${spec.runId}-${spec.trajectoryId}`)}-${randomBytes(3).toString("hex")}`;
      const deps = spec.depsDir ? depsEnv(SANDBOX_PATHS.deps, { venv: await hasVenv(spec.depsDir) }) : {};
      const env: Record<string, string> = {
        HOME: SANDBOX_PATHS.home,
        PATH: [
          ...(spec.depsDir ? depsPath(SANDBOX_PATHS.deps, spec.profile) : []),
          ...(options.pathPrefix ?? []),
          "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ].join(":"),
        LANG: "C.UTF-8",
        TMPDIR: "/tmp",
        ...deps,
        ...OFFLINE_ENV,
        ...spec.env,
      };
      // Without a user namespace (podman's uidmap breaks its storage here) the container user must
      // own the workspace to write it; with all capabilities dropped it can write nothing else.
      const owner = await stat(spec.workspace);
      const user = `${owner.uid}:${owner.gid}`;
      // the agent's core: the image's own (flake images), else the runner's bound in; before any
      // host dir exists, so a wrong image leaves nothing behind
      const pkg = spec.agent ? await agentClinePackage(image) : undefined;
      const host = await makeHostDirs(join(stateDir, name), owner);
      if (pkg) return await startAgent(spec, { name, image, env, user, signal, host, pkg });
      const run = await pm(
        podmanRunArgs(spec, {
          name,
          image,
          runtime,
          binds: options.binds ?? [],
          tmpSizeMb: options.tmpSizeMb ?? 512,
          env,
          user,
          ...stateArgs(host.dirs),
        }),
        // the container's conmon keeps this cwd and writes an `oom` marker there
        { cwd: host.dir, ...(signal ? { signal } : {}) },
      );
      if (run.exitCode !== 0) {
        await pm(["rm", "-f", "-t", "0", name]);
        await removeWorkerDir(host.dir, host.dirs).catch(() => {});
        throw new FlakegymError(
          "E_PODMAN",
          `podman run of ${image} failed (exit ${run.exitCode}): ${run.stderr.trim()}`,
          {
            hint: "check that the image is present (podman images) and that runc is installed (apt-get install podman runc)",
          },
        );
      }
      return await makeWorker(spec, name, host);
    },
  };

  async function agentClinePackage(image: string): Promise<ClinePackage> {
    const host = resolveClinePackage();
    if (!options.clineFromImage) return host;
    return clinePackageInImage(host, image, imageClineOf(image, await imageConfig(image)));
  }

  /** The image's `.Config` (environment, labels). */
  async function imageConfig(image: string): Promise<ImageConfig> {
    const r = await pm(["image", "inspect", "--format", "{{json .Config}}", image]);
    if (r.exitCode !== 0) {
      throw new FlakegymError("E_PODMAN", `podman image inspect ${image} failed: ${r.stderr.trim()}`, {
        hint: "load the image first (`flakegym images load`; `podman images` lists what is here)",
      });
    }
    return ImageConfig.parse(JSON.parse(r.stdout));
  }

  /** The worker's host dir: owner.json and the bounded tmpfs with /tmp, HOME, config, sockets. */
  async function makeHostDirs(dir: string, owner: { uid: number; gid: number }): Promise<HostDirs> {
    await mkdir(dir, { recursive: true });
    await writeOwnerRecord(dir, "podman-worker");
    try {
      const dirs = await makeBoundedDirs(dir, options.tmpSizeMb ?? 512);
      // the container runs as the workspace's owner, without capabilities
      for (const d of [dirs.tmp, dirs.home, dirs.config, dirs.sock]) await chown(d, owner.uid, owner.gid);
      return { dir, dirs };
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** podmanRunArgs' state and owner options for a worker. */
  function stateArgs(dirs: BoundedDirs) {
    return {
      owner: ownerTag(selfOwner()),
      ...(dirs.bounded ? { state: { tmp: dirs.tmp, home: dirs.home } } : {}),
    };
  }

  async function makeWorker(
    spec: WorkerSpec,
    name: string,
    host: HostDirs,
    agent?: {
      address: string;
      policyBaseUrl: string;
      configDir: string;
      stop(): Promise<void>;
      exited: Promise<unknown>;
    },
  ): Promise<Worker> {
    const cgroupPath = (await pm(["inspect", "--format", "{{.State.CgroupPath}}", name])).stdout.trim();
    const cgroup: CgroupDirs | undefined = cgroupPath ? await cgroupDirsAt(cgroupPath) : undefined;
    const quotaByFs =
      spec.limits.diskMb !== undefined && (await fsEnforcesQuota(spec.workspace, spec.limits.diskMb));
    let exit: WorkerExit | undefined;
    let resolveExit!: (e: WorkerExit) => void;
    const exited = new Promise<WorkerExit>((r) => {
      resolveExit = r;
    });
    let stopping: Promise<void> | undefined;
    const startedAt = Date.now();
    const end = (e: WorkerExit) => {
      if (stopping) return stopping;
      exit = e;
      stopping = (async () => {
        clearTimeout(wall);
        clearInterval(watchdog);
        await agent?.stop().catch(() => {});
        await pm(["rm", "-f", "-t", "0", name]);
        // everything the worker made goes: config (gateway token), sockets, HOME, /tmp
        await removeWorkerDir(host.dir, host.dirs).catch(() => {});
        resolveExit(e);
      })();
      return stopping;
    };
    const wall = setTimeout(
      () => void end({ reason: "wall_clock", detail: `wall clock limit ${spec.limits.wallClockMs} ms` }),
      spec.limits.wallClockMs,
    );
    // The container's CPU time (all its processes), OOM kills and what no filesystem bounds, like local.
    let checking = false;
    let lastDiskCheck = 0;
    const initialOom = cgroup ? (await readLimitEvents(cgroup)).oomKills : 0;
    const interval = options.watchdogIntervalMs ?? 1000;
    const watchdog = setInterval(async () => {
      if (checking || exit) return;
      checking = true;
      try {
        const usage = cgroup ? await readUsage(cgroup) : undefined;
        const cpu = spec.limits.cpuSeconds;
        if (usage && cpu !== undefined && usage.cpuUsec >= cpu * 1e6) {
          await end({
            reason: "cpu_time",
            detail: `used ${(usage.cpuUsec / 1e6).toFixed(1)} s of CPU (limit ${cpu} s)`,
          });
          return;
        }
        if (cgroup && (await readLimitEvents(cgroup)).oomKills > initialOom) {
          await end({ reason: "memory", detail: `memory limit ${spec.limits.memoryMb} MiB reached` });
          return;
        }
        if (Date.now() - lastDiskCheck > 5 * interval) {
          lastDiskCheck = Date.now();
          const over = await unboundedDiskOver(spec, quotaByFs, host.dirs);
          if (over) await end({ reason: "disk", detail: over });
        }
      } finally {
        checking = false;
      }
    }, interval);
    // The container ending on its own (OOM of PID 1, killed from outside) ends the worker, for the
    // reason its own exit facts give: podman's OOMKilled, the cgroup's OOM kill count or conmon's
    // OOM marker (runc may remove the cgroup, or podman miss the kill, before this reads them).
    // An exec-only container's init ends only by a kill from outside (exec-only-init.ts): an exec
    // cut short by it is the machinery's loss (retried), not the code under test's doing.
    let outsideKill = false;
    const endedOnItsOwn = async () => {
      if (exit) return;
      const state = parseExitState(
        (await pm(["inspect", "--format", "{{.State.OOMKilled}} {{.State.ExitCode}}", name])).stdout,
      );
      const events = cgroup ? await readLimitEvents(cgroup).catch(() => undefined) : undefined;
      const facts = {
        ...state,
        oomKills: events ? events.oomKills - initialOom : undefined,
        conmonOomMarker: await conmonOomMarkerIn(host.dir),
        memoryMb: spec.limits.memoryMb,
      };
      if (exit) return;
      outsideKill = !agent && killedFromOutside(facts);
      void end(containerExitOf(facts));
    };
    /** After an exec ended abnormally: whether its container was killed from outside meanwhile (bounded wait). */
    const lostFromOutside = async (): Promise<boolean> => {
      if (agent) return false;
      if (!exit) {
        const running = await pm(["inspect", "--format", "{{.State.Running}}", name]);
        if (running.exitCode === 0 && running.stdout.trim() === "true") return false;
      }
      await exitWithin({ exited }, 30_000, "the podman worker's end after its container stopped");
      return outsideKill;
    };
    void pm(["wait", name], { timeoutMs: spec.limits.wallClockMs + 60_000 }).then(endedOnItsOwn);
    if (agent) void agent.exited.then(endedOnItsOwn);
    const worker: Worker = {
      id: name,
      backend: "podman",
      ...(agent
        ? {
            agentAddress: agent.address,
            policyBaseUrl: agent.policyBaseUrl,
            configDir: agent.configDir,
            // The workspace and the config dir are bind mounts of host dirs: the core's task files
            // and the agent's changes are read (and diffed) on the host, like the local backend.
            async collectArtifacts(c: CollectArtifactsInput): Promise<void> {
              await collectHostArtifacts(
                { id: name, configDir: agent.configDir, workspace: spec.workspace },
                c,
              );
            },
          }
        : {}),
      exited,
      async exec(command: string, o: ExecOptions = {}): Promise<ExecResult> {
        if (exit)
          return { ...stoppedExecResult(name, exit.reason), ...(outsideKill ? { sandboxKilled: true } : {}) };
        const none = { oomKills: 0, pidsRejected: 0 };
        const before = cgroup ? await readLimitEvents(cgroup) : none;
        const timeoutMs = execTimeoutMs(spec, startedAt, o.timeoutMs);
        const args = ["exec", "--workdir", o.cwd ?? SANDBOX_PATHS.workspace];
        for (const [k, v] of Object.entries(o.env ?? {})) args.push("--env", `${k}=${v}`);
        // `timeout` inside kills the command's whole process group; the client is a backstop.
        const secs = Math.max(1, Math.ceil(timeoutMs / 1000));
        const cpu =
          spec.limits.cpuSeconds === undefined ? "" : `ulimit -t ${spec.limits.cpuSeconds + 2} 2>/dev/null; `;
        args.push(name, "timeout", "-s", "KILL", String(secs), "/bin/sh", "-c", `${cpu}${command}`);
        const started = performance.now();
        const r = await pm(args, {
          timeoutMs: timeoutMs + 10_000,
          cwd: host.dir,
          ...(o.signal ? { signal: o.signal } : {}),
        });
        const code = r.exitCode ?? 137;
        const durationMs = Math.round(performance.now() - started);
        const ended = (exit as WorkerExit | undefined)?.reason;
        const timedOut = (code === 137 && durationMs >= timeoutMs - 50) || ended === "wall_clock";
        const after = cgroup ? await readLimitEvents(cgroup) : none;
        const full = async () =>
          (quotaByFs && (await filesystemFull(spec.workspace))) ||
          (host.dirs.bounded && (await filesystemFull(host.dirs.root)));
        const limit = execLimitOf({
          exitCode: code,
          timedOut,
          ...(ended ? { workerExit: ended } : {}),
          oomKills: after.oomKills - before.oomKills,
          pidsRejected: after.pidsRejected - before.pidsRejected,
          diskFull: code !== 0 && (await full()),
        });
        const sandboxKilled = code !== 0 && !timedOut && !o.signal?.aborted && (await lostFromOutside());
        return {
          exitCode: code,
          stdout: r.stdout,
          stderr: r.stderr,
          timedOut,
          durationMs,
          ...(limit ? { limit } : {}),
          ...(sandboxKilled ? { sandboxKilled: true } : {}),
        };
      },
      stop: () => end({ reason: "stopped" }),
    };
    return worker;
  }

  /**
   * An agent worker: the container's PID 1 is cline-vendor's supervisor, started in the foreground
   * by `launchClineCore` through a `wrap` that turns its command into `podman run`. The supervisor
   * script, the cline package and the config/socket dirs are bound at their host paths; the
   * gateway's socket at /run/flakegym/gateway.sock, forwarded to 127.0.0.1:18080 inside.
   */
  async function startAgent(
    spec: WorkerSpec,
    o: {
      name: string;
      image: string;
      env: Record<string, string>;
      user: string;
      signal: AbortSignal | undefined;
      host: HostDirs;
      pkg: ClinePackage;
    },
  ): Promise<Worker> {
    const pkg = o.pkg;
    const dir = o.host.dir;
    const configDir = o.host.dirs.config;
    const socketDir = o.host.dirs.sock;
    await ensureConf();
    const node = options.nodeInImage ?? process.execPath;
    const binds: Bind[] = [
      ...(options.binds ?? []),
      { src: dirname(SUPERVISOR_PATH), dest: dirname(SUPERVISOR_PATH) },
      ...(options.clineFromImage ? [] : [{ src: pkg.root, dest: pkg.root }]),
      { src: configDir, dest: configDir, rw: true },
      { src: socketDir, dest: socketDir, rw: true },
      { src: spec.gateway.socketPath!, dest: SANDBOX_GATEWAY_SOCKET },
    ];
    const core = await launchClineCore({
      workspace: spec.workspace,
      configDir,
      home: o.host.dirs.home,
      clinePackage: pkg,
      ...(spec.env ? { env: spec.env } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
      startTimeoutMs: options.agentStartTimeoutMs ?? 120_000,
      // same-page merging's helper runs /usr/bin/python3, which an image need not have (the
      // launcher probes the host, not the image): podman cores start without it
      memoryMerge: false,
      listen: { kind: "unix", path: unixSocketPath(socketDir, "core.sock") },
      supervisorArgs: ["--forward", `127.0.0.1:${SANDBOX_GATEWAY_PORT}=unix:${SANDBOX_GATEWAY_SOCKET}`],
      wrap: (cmd) => {
        const inside = (a: string) =>
          a === spec.workspace ? SANDBOX_PATHS.workspace : a === process.execPath ? node : a;
        const env = { ...cmd.env, ...o.env, HOME: SANDBOX_PATHS.home };
        const args = podmanRunArgs(spec, {
          name: o.name,
          image: o.image,
          runtime,
          binds,
          tmpSizeMb: options.tmpSizeMb ?? 512,
          env,
          user: o.user,
          foreground: true,
          command: [inside(cmd.command), ...cmd.args.map(inside)],
          ...stateArgs(o.host.dirs),
        });
        return {
          // run from the worker's dir: conmon writes files (an `oom` marker) into its cwd
          command: "env",
          args: ["-C", dir, podman, ...args],
          env: { CONTAINERS_CONF: confFile, PATH: process.env.PATH ?? "/usr/bin:/bin" },
        };
      },
    }).catch(async (err: unknown) => {
      await pm(["rm", "-f", "-t", "0", o.name]);
      await removeWorkerDir(dir, o.host.dirs).catch(() => {});
      throw err;
    });
    const policyBaseUrl = `http://127.0.0.1:${SANDBOX_GATEWAY_PORT}${spec.gateway.url ? new URL(spec.gateway.url).pathname.replace(/\/$/, "") : "/v1"}`;
    return await makeWorker(spec, o.name, o.host, {
      address: core.address,
      policyBaseUrl,
      configDir,
      stop: () => core.stop(),
      exited: core.exited,
    });
  }
}

/** A podman worker's host dir (owner.json) and its bounded state. */
interface HostDirs {
  readonly dir: string;
  readonly dirs: BoundedDirs;
}
