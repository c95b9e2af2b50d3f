import { mkdir, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClinePackage, resolveClinePackage } from "@flakegym/cline-vendor";
import { execa } from "execa";
import { FlakegymError } from "../../errors.js";
import { tempPathBeside } from "../../run-format/temp-name.js";
import { clinePackageInImage, ImageConfig, imageClineOf } from "./image-cline.js";
import { CONTAINERS_CONF, type PodmanBackendOptions } from "./options.js";

/**
 * What one podman backend holds, shared by its functions (podman-backend.ts, worker.ts,
 * start-agent.ts, base-image.ts): its options, the podman binary and runtime, the containers.conf
 * it writes once, and the base image's import once.
 */
export interface PodmanState {
  readonly options: PodmanBackendOptions;
  readonly stateDir: string;
  readonly podman: string;
  readonly runtime: string;
  readonly confFile: string;
  readonly tmpSizeMb: number;
  confReady: Promise<void> | undefined;
  imageReady: Promise<void> | undefined;
}

export function createPodmanState(options: PodmanBackendOptions): PodmanState {
  const stateDir = options.stateDir ?? join(tmpdir(), "flakegym-podman");
  return {
    options,
    stateDir,
    podman: options.podmanPath ?? "podman",
    runtime: options.runtime ?? "/usr/sbin/runc",
    confFile: join(stateDir, "containers.conf"),
    tmpSizeMb: options.tmpSizeMb ?? 512,
    confReady: undefined,
    imageReady: undefined,
  };
}

/** Writes the backend's containers.conf once (atomically). */
export function ensureConf(st: PodmanState): Promise<void> {
  st.confReady ??= (async () => {
    await mkdir(st.stateDir, { recursive: true });
    const tmp = tempPathBeside(st.confFile);
    await writeFile(tmp, CONTAINERS_CONF);
    await rename(tmp, st.confFile);
  })();
  return st.confReady;
}

/** Runs podman with the backend's containers.conf, bounded (default 120 s), never rejecting on exit status. */
export async function pm(
  st: PodmanState,
  args: string[],
  o: { timeoutMs?: number; signal?: AbortSignal; cwd?: string } = {},
) {
  await ensureConf(st);
  return await execa(st.podman, args, {
    reject: false,
    stripFinalNewline: false,
    timeout: o.timeoutMs ?? 120_000,
    env: { CONTAINERS_CONF: st.confFile },
    // conmon writes files (an `oom` marker) into its cwd: never the runner's
    cwd: o.cwd ?? st.stateDir,
    stdin: "ignore",
    ...(o.signal ? { cancelSignal: o.signal } : {}),
  });
}

/** Removes a container at once (SIGKILL: its init ignores everything else). */
export async function removeContainer(st: PodmanState, name: string): Promise<void> {
  await pm(st, ["rm", "-f", "-t", "0", name]);
}

/** The image's `.Config` (environment, labels). */
export async function imageConfig(st: PodmanState, image: string): Promise<ImageConfig> {
  const r = await pm(st, ["image", "inspect", "--format", "{{json .Config}}", image]);
  if (r.exitCode !== 0) {
    throw new FlakegymError("E_PODMAN", `podman image inspect ${image} failed: ${r.stderr.trim()}`, {
      hint: "load the image first (`flakegym images load`; `podman images` lists what is here)",
    });
  }
  return ImageConfig.parse(JSON.parse(r.stdout));
}

/** The agent's core: the image's own (flake images), else the runner's, bound in. */
export async function agentClinePackage(st: PodmanState, image: string): Promise<ClinePackage> {
  const host = resolveClinePackage();
  if (!st.options.clineFromImage) return host;
  return clinePackageInImage(host, image, imageClineOf(image, await imageConfig(st, image)));
}
