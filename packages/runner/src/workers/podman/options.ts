import type { Bind } from "../local/bwrap-args.js";
import { nodeBinds } from "../local/toolchain.js";

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

export const CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n";
