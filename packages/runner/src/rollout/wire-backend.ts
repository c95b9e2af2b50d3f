import { createNomadClient, nomadConfigFromEnv } from "@flakegym/nomad-jobs";
import { match } from "ts-pattern";
import { UsageError } from "../errors.js";
import type { ListenSpec } from "../gateway/types.js";
import type { RunConfig } from "../run-format/schema.js";
import { clineAgentLauncher } from "../workers/local/cline-agent.js";
import { createLocalBackend } from "../workers/local/local-backend.js";
import { createNomadBackend } from "../workers/nomad/backend.js";
import { formatProgress } from "../workers/nomad/progress.js";
import { rawExecClineDriver } from "../workers/nomad/raw-exec-cline.js";
import {
  createPodmanBackend,
  flakeImagePodmanOptions,
  hostToolchainPodmanOptions,
} from "../workers/podman/podman-backend.js";
import { createWorkerPool } from "../workers/pool/pool.js";
import { isPoolable, type PooledBackend } from "../workers/pool/types.js";
import type { WorkerBackend } from "../workers/types.js";
import { nomadRolloutDriver } from "./nomad-driver.js";
import type { WireOptions } from "./wire-options.js";

/**
 * The rollout's worker backend: the one `config.backend` names (or the caller's), behind a warm
 * pool when `--pool` asks for one and the backend can pre-boot workers.
 */

/** A backend the wiring may have to close. */
export type ClosableBackend = WorkerBackend & { close?(): Promise<void> };

/**
 * The extra listener of `--gateway-advertise <host:port>` (already validated by
 * parseGatewayAdvertise): IPv6 brackets dropped. Pure.
 */
export function advertiseListenOf(advertised: string): ListenSpec {
  const colon = advertised.lastIndexOf(":");
  return {
    host: advertised.slice(0, colon).replace(/^\[|\]$/g, ""),
    port: Number(advertised.slice(colon + 1)),
  };
}

/** Refuses `--backend nomad` without `--gateway-advertise`: remote workers cannot reach loopback. Pure. */
export function checkGatewayAdvertise(backendKind: string, advertised: string | undefined): void {
  if (backendKind === "nomad" && !advertised) {
    throw new UsageError(
      "--backend nomad needs --gateway-advertise <host:port>",
      "name an address of this machine the Nomad clients can reach (not loopback), e.g. --gateway-advertise 10.0.0.5:8089; the gateway listens there",
    );
  }
}

/** Whether `--pool` asks for a warm pool (a size of 0 is none). Pure. */
export function wantsPool(pool: WireOptions["pool"]): boolean {
  return pool !== undefined && pool.size > 0;
}

/**
 * The Nomad backend of `rollout --backend nomad`: client from NOMAD_ADDR/NOMAD_TOKEN/…; the driver
 * from FLAKEGYM_NOMAD_DRIVER (nomadRolloutDriver): raw_exec runs this machine's pinned Cline,
 * docker/podman each task's snapshot image by digest (--images nix).
 */
function nomadRolloutBackend(
  config: RunConfig,
  o: WireOptions,
  advertise: string,
): WorkerBackend & { close(): Promise<void> } {
  const chosen = nomadRolloutDriver(
    o.env.FLAKEGYM_NOMAD_DRIVER,
    config.images,
    o.env.FLAKEGYM_NOMAD_ALLOW_UNISOLATED,
  );
  return createNomadBackend(
    {
      driver: chosen.kind === "raw_exec" ? { ...rawExecClineDriver(), allowUnisolated: true } : chosen.driver,
      gatewayAdvertise: advertise,
      pollMs: 5_000,
    },
    {
      client: createNomadClient(nomadConfigFromEnv(o.env)),
      ...(o.onNote ? { onProgress: (p) => o.onNote!(formatProgress(p)) } : {}),
    },
  );
}

/** The backend `config.backend` names, unless the caller gave one (tests). */
export function chooseBackend(
  config: RunConfig,
  o: WireOptions,
  advertised: string | undefined,
): ClosableBackend {
  return (
    o.backend ??
    match(config.backend)
      .with("local", () => createLocalBackend({ agent: clineAgentLauncher() }))
      .with("nomad", () => nomadRolloutBackend(config, o, advertised!))
      // the flake's images (--images nix), else a minimal locally imported image with the
      // host's /usr (and node) bound read-only
      .with("podman", () =>
        createPodmanBackend(
          config.images === "nix" ? flakeImagePodmanOptions() : hostToolchainPodmanOptions(),
        ),
      )
      .exhaustive()
  );
}

/** The warm pool in front of a backend that can pre-boot workers; others run without one (said once). */
export function poolFor(backend: WorkerBackend, o: WireOptions): PooledBackend | undefined {
  if (!wantsPool(o.pool)) return undefined;
  if (!isPoolable(backend)) {
    o.onNote?.(`warm pool: the ${backend.kind} backend cannot pre-boot workers; every worker starts cold`);
    return undefined;
  }
  return createWorkerPool(backend, {
    size: o.pool!.size,
    idleMs: o.pool!.idleMs,
    ...(o.onNote ? { onNote: o.onNote } : {}),
    ...(o.onPool ? { onState: o.onPool } : {}),
  });
}
