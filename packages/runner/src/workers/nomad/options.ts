import { Constraint, type NomadClient, WorkerSandbox } from "@flakegym/nomad-jobs";
import { z } from "zod";
import type { ReadinessProbe } from "./probe.js";
import type { NomadProgress } from "./progress.js";

/**
 * Configuration of the Nomad backend. The image comes from each WorkerSpec (`spec.image`, a
 * digest from the flake); the driver block says how the cluster runs it.
 */

const Container = {
  networkMode: z
    .string()
    .optional()
    .describe(
      "container network whose egress reaches only the gateway (default flakegym-egress, created by the operator; host, bridge and none are refused)",
    ),
  containerPort: z.number().int().positive().optional().describe("the core's port inside the container"),
  allowMutableTag: z.boolean().default(false).describe("accept image tags (locally loaded images)"),
  command: z.string().optional(),
  args: z.array(z.string()).default([]),
};

export const BackendDriver = z.discriminatedUnion("driver", [
  z
    .object({
      driver: z.literal("docker"),
      runtime: z.string().optional().describe("e.g. runsc"),
      ...Container,
    })
    .strict(),
  z.object({ driver: z.literal("podman"), ...Container }).strict(),
  z
    .object({
      driver: z.literal("nix"),
      flake: z
        .string()
        .optional()
        .describe("flake output template, {profile} replaced (used when spec.image is not a flake ref)"),
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
    })
    .strict(),
  z
    .object({
      driver: z.literal("raw_exec"),
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      allowUnisolated: z
        .boolean()
        .default(false)
        .describe(
          "raw_exec isolates nothing (own user, filesystem, network, processes): refused unless set, for trusted workloads on a dev agent",
        ),
    })
    .strict()
    .describe("no isolation: a dev agent or the real-agent test suite only"),
]);
export type BackendDriver = z.infer<typeof BackendDriver>;

/** Sizing of every worker; memory follows each spec's limit plus the core (`sizeWorkerMemory`). */
export const BackendResources = z
  .object({
    cpuMhz: z.number().int().positive().default(1000).describe("CPU reservation (MHz)"),
    memoryMb: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "memory reserved (MemoryMB) when smaller than the need (the spec's limit + the core's 416 MB), which then becomes MemoryMaxMB: only for clusters with memory oversubscription enabled",
      ),
    diskMb: z.number().int().positive().default(4096).describe("ephemeral disk (MB) unless the spec says"),
  })
  .strict();
export type BackendResources = z.infer<typeof BackendResources>;

export const NomadBackendOptions = z
  .object({
    driver: BackendDriver,
    gatewayAdvertise: z
      .string()
      .optional()
      .describe("host:port of the policy gateway as the Nomad clients reach it (never loopback)"),
    namespace: z.string().optional(),
    region: z.string().optional(),
    datacenters: z.array(z.string().min(1)).default(["*"]),
    nodePool: z.string().optional(),
    constraints: z.array(Constraint).default([]),
    resources: BackendResources.default(BackendResources.parse({})),
    sandbox: WorkerSandbox.default(WorkerSandbox.parse({})),
    workspaceDir: z
      .string()
      .optional()
      .describe(
        "the agent's workspace (default: the image's /workspace; the allocation dir for raw_exec/nix)",
      ),
    snapshotDir: z
      .string()
      .optional()
      .describe("raw_exec/nix: a directory copied into an empty workspace first"),
    startTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(300_000)
      .describe("placement + image pull + core boot, per worker"),
    maxConcurrentStarts: z
      .number()
      .int()
      .positive()
      .default(32)
      .describe(
        "worker starts talking to Nomad at once (the others queue; startTimeoutMs runs from admission)",
      ),
    execTimeoutMs: z.number().int().positive().default(1_800_000).describe("default deadline of one exec"),
    pollMs: z.number().int().positive().default(30_000).describe("longest single blocking query"),
    probeIntervalMs: z.number().int().positive().default(200),
    /** How long a registered parent job may outlive a crashed runner before a sweep purges it. */
    parentTtlMs: z
      .number()
      .int()
      .positive()
      .default(24 * 3_600_000),
    /** Added to a worker's wall clock for its MaxRunDuration and expiry. */
    graceMs: z.number().int().nonnegative().default(600_000),
    cleanupTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(15_000)
      .describe("deadline of a purge during cleanup"),
  })
  .strict();
export type NomadBackendOptions = z.infer<typeof NomadBackendOptions>;
export type NomadBackendOptionsInput = z.input<typeof NomadBackendOptions>;

/** Collaborators that are not configuration: the client, the readiness probe, progress, a clock. */
export interface NomadBackendDeps {
  readonly client: NomadClient;
  /** Default: http2Probe (the core's gRPC port answers HTTP/2). */
  readonly probe?: ReadinessProbe;
  readonly onProgress?: (p: NomadProgress) => void;
  readonly now?: () => number;
}
