import { z } from "zod";
import { checkNetworkMode, DEFAULT_WORKER_NETWORK } from "./network-mode.js";

/**
 * The worker's Nomad drivers (docker, podman, nix, raw_exec) as zod schemas, and the checks every
 * worker-image job needs: a digest-pinned image, a refused network mode, raw_exec only when allowed.
 */

/** The Cline core's default gRPC port; inside a container the core listens there. */
export const DEFAULT_CONTAINER_GRPC_PORT = 26040;

const DIGEST_REF = /@sha256:[0-9a-f]{64}$/;

const ImageRef = z
  .string()
  .min(1)
  .describe("image reference; pin it by digest (name@sha256:...) so every worker runs the same bytes");

const ContainerCommon = {
  image: ImageRef,
  allowMutableTag: z
    .boolean()
    .default(false)
    .describe("accept a tag instead of a digest (local development with a loaded image)"),
  command: z.string().optional().describe("override the image's entrypoint command"),
  args: z.array(z.string()).default([]).describe("arguments for the entrypoint"),
  networkMode: z
    .string()
    .default(DEFAULT_WORKER_NETWORK)
    .describe(
      "container network whose egress reaches only the policy gateway (the operator creates it; host, bridge, none and another container's namespace are refused)",
    ),
  containerPort: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_CONTAINER_GRPC_PORT)
    .describe("port the core listens on inside the container"),
};

export const DockerDriver = z
  .object({
    driver: z.literal("docker"),
    ...ContainerCommon,
    runtime: z
      .string()
      .optional()
      .describe('OCI runtime, e.g. "runsc" for gVisor (must be in the client\'s allow_runtimes)'),
  })
  .strict();

export const PodmanDriver = z
  .object({
    driver: z.literal("podman"),
    ...ContainerCommon,
  })
  .strict();

export const NixDriver = z
  .object({
    driver: z.literal("nix"),
    flake: z
      .string()
      .regex(/#./, "expected a flake output reference like <flake-ref>#<output>")
      .describe("flake output holding the worker (only its closure is mounted into the task)"),
    command: z.string().min(1).describe("program on the output's bin/ to run, e.g. flakegym-worker"),
    args: z.array(z.string()).default([]),
    extraPackages: z
      .array(z.string())
      .default(["#coreutils", "#bash"])
      .describe("more packages for the task's profile: env and sh run the worker's preparation"),
  })
  .strict();

export const RawExecDriver = z
  .object({
    driver: z.literal("raw_exec"),
    command: z.string().min(1).describe("absolute path of the program on the client"),
    args: z.array(z.string()).default([]),
    allowUnisolated: z
      .boolean()
      .default(false)
      .describe(
        "accept that raw_exec isolates nothing (see RAW_EXEC_MISSING_ISOLATION): trusted workloads on a dev agent only; refused otherwise",
      ),
  })
  .strict()
  .describe("no isolation at all: only for a dev agent and the real-agent test suite");

/**
 * What raw_exec does not isolate (Nomad's raw_exec runs the task as the client's user, with the
 * host's filesystem, network and process table): why a hostile workload is refused on it.
 */
export const RAW_EXEC_MISSING_ISOLATION = [
  "no user separation (every worker runs as the Nomad client's user)",
  "no filesystem view of its own (other trajectories' workspaces and tokens, the runner's run directories and the catalog's hidden tests are readable)",
  "no network namespace (the core listens on the node's loopback, reachable by every process there, and egress is open)",
  "no process isolation (/proc/<pid>/environ of the Nomad client and of other workers is readable)",
] as const;

export const WorkerDriver = z.discriminatedUnion("driver", [
  DockerDriver,
  PodmanDriver,
  NixDriver,
  RawExecDriver,
]);
export type WorkerDriver = z.infer<typeof WorkerDriver>;
export type WorkerDriverInput = z.input<typeof WorkerDriver>;

function checkImage(d: { image: string; allowMutableTag: boolean }): void {
  if (!d.allowMutableTag && !DIGEST_REF.test(d.image)) {
    throw new TypeError(
      `worker image '${d.image}' is not pinned by digest: reference it as name@sha256:<digest> ` +
        "(see docs/reference/nomad.md, Image publishing), or set allowMutableTag for a locally loaded image",
    );
  }
}

/** Validates what every worker-image job needs: a pinned image; raw_exec only when explicitly allowed. */
export function checkWorkerDriver(d: WorkerDriver): void {
  if (d.driver === "docker" || d.driver === "podman") {
    checkImage(d);
    checkNetworkMode(d.networkMode);
  }
  if (d.driver === "raw_exec" && !d.allowUnisolated) {
    throw new TypeError(
      "the raw_exec driver cannot hold an agent's workload: it has " +
        RAW_EXEC_MISSING_ISOLATION.join("; ") +
        ". Use docker (runtime runsc), podman or nix, or set allowUnisolated (FLAKEGYM_NOMAD_ALLOW_UNISOLATED=1) " +
        "for trusted workloads on a dev agent (docs/reference/nomad.md, Isolation)",
    );
  }
}
