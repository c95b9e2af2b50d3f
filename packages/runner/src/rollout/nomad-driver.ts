import { UsageError } from "../errors.js";
import type { BackendDriver } from "../workers/nomad/options.js";

/**
 * The Nomad driver of `rollout --backend nomad`, from FLAKEGYM_NOMAD_DRIVER and `--images`. Pure.
 * - `raw_exec`: this machine's pinned Cline on clients sharing its filesystem (no isolation);
 * - `docker` / `podman`: each task's snapshot image by its pushed digest (`--images nix`; the
 *   image's entrypoint `flakegym-worker` boots the core, the work tree is the image's /workspace).
 * Throws naming the variable or flag to set.
 */
export function nomadRolloutDriver(
  driver: string | undefined,
  images: "nix" | undefined,
  allowUnisolated?: string | undefined,
):
  | { readonly kind: "raw_exec" }
  | { readonly kind: "container"; readonly driver: Extract<BackendDriver, { driver: "docker" | "podman" }> } {
  if (driver === "raw_exec") {
    if (allowUnisolated !== "1") {
      throw new UsageError(
        "FLAKEGYM_NOMAD_DRIVER=raw_exec isolates nothing: every worker runs as the Nomad client's user with the host's filesystem, network and process table (other trajectories' files and tokens, the catalog's hidden tests, the client's environment in /proc, and the core's port on the node's loopback)",
        "for trusted workloads on a dev agent only, also set FLAKEGYM_NOMAD_ALLOW_UNISOLATED=1; for agents, use FLAKEGYM_NOMAD_DRIVER=docker (runtime runsc) or podman with --images nix",
      );
    }
    if (images === "nix") {
      throw new UsageError(
        "FLAKEGYM_NOMAD_DRIVER=raw_exec runs this machine's Cline and toolchains, not an image: --images nix does not apply",
        "drop --images nix, or set FLAKEGYM_NOMAD_DRIVER=docker (or podman) to run the flake's snapshot images",
      );
    }
    return { kind: "raw_exec" };
  }
  if (driver === "docker" || driver === "podman") {
    if (images !== "nix") {
      throw new UsageError(
        `FLAKEGYM_NOMAD_DRIVER=${driver} runs the flake's snapshot images: add --images nix`,
        "load and push each task's snapshot image first: flakegym images load --task <id> --push <registry>",
      );
    }
    return { kind: "container", driver: { driver, allowMutableTag: false, args: [] } };
  }
  throw new UsageError(
    `--backend nomad needs FLAKEGYM_NOMAD_DRIVER=raw_exec, docker or podman${driver ? ` (not ${driver})` : ""}`,
    "raw_exec: a dev cluster whose clients share this machine's filesystem (nomad agent -dev; no isolation); docker/podman: with --images nix, each task's snapshot image pushed by digest (flakegym images load --task <id> --push <registry>)",
  );
}
