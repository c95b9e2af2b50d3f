import { match } from "ts-pattern";
import { UsageError } from "../errors.js";
import type { ListenSpec } from "../gateway/types.js";
import type { RunConfig } from "../run-format/schema.js";
import {
  type BackendConfigInput,
  type ClosableBackend,
  capabilitiesOf,
  resolveBackend,
} from "../workers/backend.js";
import { createWorkerPool } from "../workers/pool/pool.js";
import { isPoolable, type PooledBackend } from "../workers/pool/types.js";
import type { BackendKind, WorkerBackend } from "../workers/types.js";
import { nomadRolloutDriver } from "./nomad-driver.js";
import type { WireOptions } from "./wire-options.js";

export type { ClosableBackend } from "../workers/backend.js";
/**
 * The rollout's worker backend: the one `config.backend` names (or the caller's), behind a warm
 * pool when `--pool` asks for one and the backend can pre-boot workers.
 */

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

/** Refuses a backend whose workers are remote (`--backend nomad`) without `--gateway-advertise`: remote workers cannot reach loopback. Pure. */
export function checkGatewayAdvertise(backendKind: BackendKind, advertised: string | undefined): void {
  if (capabilitiesOf(backendKind).needsRoutableGateway && !advertised) {
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
 * The backend config of a run (pure): `config.backend` with its images; for Nomad the address
 * the gateway is advertised at and the driver from FLAKEGYM_NOMAD_DRIVER (nomadRolloutDriver:
 * raw_exec runs this machine's pinned Cline, docker/podman each task's snapshot image by digest).
 */
export function backendConfigOf(
  config: Pick<RunConfig, "backend" | "images">,
  env: WireOptions["env"],
  advertised: string | undefined,
): BackendConfigInput {
  const images = config.images === "nix" ? "nix" : "host";
  return match(config.backend)
    .with("local", () => ({ kind: "local" }) as const)
    .with("podman", () => ({ kind: "podman", images }) as const)
    .with("nomad", () => {
      const chosen = nomadRolloutDriver(
        env.FLAKEGYM_NOMAD_DRIVER,
        config.images,
        env.FLAKEGYM_NOMAD_ALLOW_UNISOLATED,
      );
      return {
        kind: "nomad",
        images,
        gatewayAdvertise: advertised ?? "",
        driver: chosen.kind === "raw_exec" ? "raw_exec" : chosen.driver.driver,
      } as const;
    })
    .exhaustive();
}

/** The backend `config.backend` names, unless the caller gave one (tests). */
export function chooseBackend(
  config: RunConfig,
  o: WireOptions,
  advertised: string | undefined,
): ClosableBackend {
  return resolveBackend(o.backend ?? backendConfigOf(config, o.env, advertised), {
    env: o.env,
    ...(o.onNote ? { onNote: o.onNote } : {}),
  }).backend;
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
    ...(o.pool!.reuse !== undefined ? { reuse: o.pool!.reuse } : {}),
    ...(o.onNote ? { onNote: o.onNote } : {}),
    ...(o.onPool ? { onState: o.onPool } : {}),
  });
}
