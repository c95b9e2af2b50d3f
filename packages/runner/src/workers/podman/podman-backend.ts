import { randomBytes } from "node:crypto";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { FlakegymError } from "../../errors.js";
import { TREE_DONE_MARK } from "../../gc/harbor-tree-use.js";
import { removeWorkerDir } from "../bounded-dirs.js";
import { ownedByAgentUser } from "../local/agent-apart.js";
import { imageEnvOf } from "../local/container-root.js";
import { hostBindsOf } from "../local/decisions.js";
import { depsEnv, hasVenv, SANDBOX_PATHS } from "../local/shape.js";
import type { BackendCapabilities, Worker, WorkerBackend, WorkerSpec } from "../types.js";
import {
  agentClinePackage,
  createPodmanState,
  type PodmanState,
  pm,
  removeContainer,
} from "./backend-state.js";
import { ensureBaseImage } from "./base-image.js";
import { makeHostDirs, stateArgs } from "./host-dirs.js";
import { BASE_IMAGE, type PodmanBackendOptions } from "./options.js";
import { onBuiltTree } from "./rootfs-image.js";
import { containerEnv, containerName, podmanRunArgs } from "./run-args.js";
import { startAgent } from "./start-agent.js";
import { makeWorker } from "./worker.js";

export { writeBaseRootfs } from "./base-image.js";
export {
  BASE_IMAGE,
  CONTAINERS_CONF,
  flakeImagePodmanOptions,
  hostToolchainPodmanOptions,
  type PodmanBackendOptions,
} from "./options.js";
export { podmanRunArgs } from "./run-args.js";

/**
 * Workers as podman containers (docs/reference/sandbox.md, "The podman backend"): `start` checks the spec,
 * makes the worker's host dirs and runs its container — an exec-only init (exec-only-init.ts) for
 * command workers, cline-vendor's supervisor for agent workers (start-agent.ts); worker.ts serves
 * `exec`, the limits and the end.
 */
/** The podman backend's capabilities: containers on this host, bind-mounting its work trees. */
export const PODMAN_CAPABILITIES: BackendCapabilities = {
  bindsHiddenReadOnly: true,
  hostHasSnapshotTree: true,
  needsRoutableGateway: false,
  runsHostImages: true,
  usesOneByteCore: false,
  hostForks: true,
};

export function createPodmanBackend(options: PodmanBackendOptions = {}): WorkerBackend {
  const st = createPodmanState(options);
  return {
    kind: "podman",
    capabilities: PODMAN_CAPABILITIES,
    async describe() {
      const v = await pm(st, ["version", "--format", "{{.Client.Version}}"]).catch(() => undefined);
      return {
        podman: v?.exitCode === 0 ? v.stdout.trim() : "missing",
        runtime: st.runtime,
        containersConf: st.confFile,
        image: options.image ?? "(per worker spec)",
      };
    },
    start: (spec, signal) => startWorker(st, spec, signal),
  };
}

/** The worker's image: the spec's, else the backend's; an agent worker needs the gateway's socket. */
function checkedImage(st: PodmanState, spec: WorkerSpec): string {
  const image = spec.image ?? st.options.image;
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
  return image;
}

async function startWorker(st0: PodmanState, spec0: WorkerSpec, signal?: AbortSignal): Promise<Worker> {
  signal?.throwIfAborted();
  // a task's built tree (Harbor --build-env) runs as its own imported image
  const { st, spec } = spec0.systemRoot ? await onBuiltTree(st0, spec0) : { st: st0, spec: spec0 };
  const image = checkedImage(st, spec);
  if (st.options.importBaseImage && image === BASE_IMAGE) await ensureBaseImage(st);
  const name = containerName(spec, randomBytes(3).toString("hex"));
  const deps = spec.depsDir ? depsEnv(SANDBOX_PATHS.deps, { venv: await hasVenv(spec.depsDir) }) : {};
  // a Harbor container: its image's ENV lines (PATH aside: the sandbox's reaches node) over the sandbox's own
  const imageEnv = spec0.systemRoot ? await imageEnvOf(spec0.systemRoot, TREE_DONE_MARK) : {};
  const { PATH: _path, ...image0 } = imageEnv;
  const env = { ...containerEnv(spec, deps, st.options.pathPrefix), ...image0 };
  const container = spec0.systemRoot !== undefined;
  // a Harbor container's agent.user runs its agent (Harbor's harness too): the workspace made its
  // own, so the container runs as it (users are themselves: no user namespace)
  if (container && spec.agent && spec.agentUser) await ownedByAgentUser([spec.workspace], spec.agentUser);
  // Without a user namespace (podman's uidmap breaks its storage here) the container user must
  // own the workspace to write it; with all capabilities dropped it can write nothing else.
  const owner = await stat(spec.workspace);
  const user = `${owner.uid}:${owner.gid}`;
  // the agent's core: the image's own (flake images), else the runner's bound in; before any
  // host dir exists, so a wrong image leaves nothing behind
  const pkg = spec.agent ? await agentClinePackage(st, image) : undefined;
  const host = await makeHostDirs(join(st.stateDir, name), owner, st.tmpSizeMb);
  if (pkg) return await startAgent(st, spec, { name, image, env, user, container, signal, host, pkg });
  const run = await pm(
    st,
    podmanRunArgs(spec, {
      name,
      image,
      runtime: st.runtime,
      binds: [...(st.options.binds ?? []), ...hostBindsOf(spec)],
      tmpSizeMb: st.tmpSizeMb,
      env,
      user,
      ...(container ? { container: true } : {}),
      ...stateArgs(host.dirs),
    }),
    // the container's conmon keeps this cwd and writes an `oom` marker there
    { cwd: host.dir, ...(signal ? { signal } : {}) },
  );
  if (run.exitCode !== 0) {
    await removeContainer(st, name);
    await removeWorkerDir(host.dir, host.dirs).catch(() => {});
    throw new FlakegymError(
      "E_PODMAN",
      `podman run of ${image} failed (exit ${run.exitCode}): ${run.stderr.trim()}`,
      {
        hint: "check that the image is present (podman images) and that runc is installed (apt-get install podman runc)",
      },
    );
  }
  return await makeWorker(st, spec, name, host);
}
