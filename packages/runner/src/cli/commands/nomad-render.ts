import { canonicalizeJob, META, renderJobJson } from "@flakegym/nomad-jobs";
import { PROFILE_IDS, type ProfileId } from "@flakegym/profiles";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { listCatalog } from "../../tasks/catalog.js";
import { workerParentJob } from "../../workers/nomad/backend.js";
import { NomadWorkerError } from "../../workers/nomad/errors.js";
import { parseGatewayAdvertise, resolvePolicyBaseUrl } from "../../workers/nomad/gateway.js";
import { NomadBackendOptions } from "../../workers/nomad/options.js";
import type { WorkerSpec } from "../../workers/types.js";
import { defineCommand } from "../command.js";

/**
 * Where a task's profile and image come from. Today: the built-in catalog for the profile (or
 * --profile), and --image for the image. SEAM: when task intake and the flake's image index land,
 * resolve both here from the task id (the snapshot image's digest by (repo, commit, profile)).
 */
export async function resolveRenderTask(
  taskId: string,
  given: { profile?: string | undefined; image?: string | undefined; catalog?: string | undefined },
): Promise<{ profile: ProfileId; image?: string }> {
  let profile = given.profile;
  if (!profile) {
    const entry = (await listCatalog(given.catalog)).find((e) => e.id === taskId);
    if (!entry) {
      throw new UsageError(
        `task '${taskId}' is not in the task catalog, so its profile is unknown`,
        `pass --profile <${PROFILE_IDS.join("|")}> (see flakegym tasks list)`,
      );
    }
    profile = entry.profile;
  }
  if (!(PROFILE_IDS as readonly string[]).includes(profile)) {
    throw new UsageError(`unknown profile '${profile}'`, `profiles: ${PROFILE_IDS.join(", ")}`);
  }
  return { profile: profile as ProfileId, ...(given.image ? { image: given.image } : {}) };
}

export const nomadRenderCommand = defineCommand({
  path: ["nomad", "render"],
  summary: "print the Nomad job a task's workers are dispatched from",
  details:
    'Prints {"Job": ...} as `nomad job run -json` and POST /v1/jobs expect: the parameterized batch job of one\n' +
    "task's workers. Each worker is one dispatch of it, e.g.\n" +
    `  nomad job dispatch -meta ${META.trajectory}=t1 -meta ${META.expires}=<unix-ms> \\\n` +
    `    -meta ${META.policyUrl}=http://<gateway>/t/t1/v1 -meta ${META.coreToken}=<random> <job-id>\n` +
    "(the runner sends the same token on every gRPC call; the worker's gate refuses calls without it)",
  options: z.object({
    task: z.string().min(1).describe("task id"),
    profile: z
      .enum(PROFILE_IDS)
      .optional()
      .describe("toolchain profile (default: the task's, from the catalog)"),
    image: z
      .string()
      .optional()
      .describe("worker image by digest (name@sha256:...), or <flake>#<output> for nix"),
    driver: z.enum(["docker", "podman", "nix", "raw_exec"]).default("docker").describe("task driver"),
    command: z
      .string()
      .optional()
      .describe("program to run (nix, raw_exec) or entrypoint override (docker, podman)"),
    arg: z.array(z.string()).default([]).describe("argument for --command"),
    runtime: z.string().optional().describe("docker OCI runtime, e.g. runsc"),
    networkMode: z
      .string()
      .optional()
      .describe(
        "container network whose egress reaches only the gateway (default flakegym-egress, created by the operator; host, bridge and none are refused)",
      ),
    allowMutableTag: z.boolean().default(false).describe("accept an image tag instead of a digest"),
    allowUnisolated: z
      .boolean()
      .default(false)
      .describe("raw_exec: accept that it isolates nothing (trusted workloads on a dev agent only)"),
    gatewayAdvertise: z.string().describe("host:port where the Nomad clients reach the policy gateway"),
    gatewayUrl: z
      .string()
      .default("http://127.0.0.1:8089/v1")
      .describe(
        "the policy gateway's URL on this machine (its host:port is replaced by --gateway-advertise)",
      ),
    run: z.string().default("render").describe("run id recorded in the job's Meta"),
    namespace: z.string().optional().describe("Nomad namespace"),
    datacenter: z.array(z.string()).default([]).describe("datacenter (default: all)"),
    nodePool: z.string().optional().describe("node pool"),
    memoryMb: z
      .number()
      .int()
      .positive()
      .default(2048)
      .describe("the task's memory limit (MB); the worker gets it plus the core's measured 416 MB"),
    cpuMhz: z.number().int().positive().default(1000).describe("worker CPU reservation (MHz)"),
    diskMb: z.number().int().positive().default(4096).describe("worker ephemeral disk (MB)"),
    pids: z.number().int().positive().default(1024).describe("most processes per worker"),
    wallClockMin: z.number().positive().default(30).describe("longest a worker may run (minutes)"),
    canonical: z.boolean().default(false).describe("fill every default the way the Nomad server does"),
    catalog: z.string().optional().describe("catalog directory (default: the built-in catalog)"),
  }),
  examples: [
    "flakegym nomad render --task ratatui-2148 --image oci.example/flakegym/rust-env@sha256:<digest> --gateway-advertise 10.0.0.5:8089",
    "flakegym nomad render --task demo --profile python --driver nix --image .#worker-python --command flakegym-worker --gateway-advertise 10.0.0.5:8089",
  ],
  async run(opts, ctx) {
    const task = await resolveRenderTask(opts.task, opts);
    const advertise = wrapConfig(() => parseGatewayAdvertise(opts.gatewayAdvertise));
    const container = {
      allowMutableTag: opts.allowMutableTag,
      args: opts.arg,
      ...(opts.command ? { command: opts.command } : {}),
      ...(opts.networkMode ? { networkMode: opts.networkMode } : {}),
    };
    const driver =
      opts.driver === "docker"
        ? { driver: "docker" as const, ...container, ...(opts.runtime ? { runtime: opts.runtime } : {}) }
        : opts.driver === "podman"
          ? { driver: "podman" as const, ...container }
          : opts.driver === "raw_exec"
            ? {
                driver: opts.driver,
                command: requireCommand(opts.command, opts.driver),
                args: opts.arg,
                allowUnisolated: opts.allowUnisolated,
              }
            : { driver: opts.driver, command: requireCommand(opts.command, opts.driver), args: opts.arg };
    if ((opts.driver === "docker" || opts.driver === "podman") && !task.image) {
      throw new UsageError(
        `--driver ${opts.driver} needs --image`,
        "pass the worker image by digest: --image name@sha256:<digest>",
      );
    }
    const backend = NomadBackendOptions.parse({
      driver,
      gatewayAdvertise: advertise,
      resources: { cpuMhz: opts.cpuMhz, diskMb: opts.diskMb },
      ...(opts.datacenter.length ? { datacenters: opts.datacenter } : {}),
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      ...(opts.nodePool ? { nodePool: opts.nodePool } : {}),
    });
    const spec: WorkerSpec = {
      runId: opts.run,
      taskId: opts.task,
      trajectoryId: "render",
      profile: task.profile,
      workspace: "",
      ...(task.image ? { image: task.image } : {}),
      gateway: { url: opts.gatewayUrl },
      limits: {
        memoryMb: opts.memoryMb,
        pids: opts.pids,
        diskMb: opts.diskMb,
        wallClockMs: opts.wallClockMin * 60_000,
      },
      agent: true,
    };
    const job = wrapConfig(() =>
      workerParentJob(backend, spec, resolvePolicyBaseUrl(spec.gateway, advertise), Date.now()),
    );
    ctx.stdout.write(renderJobJson(opts.canonical ? canonicalizeJob(job) : job));
    return 0;
  },
});

function requireCommand(command: string | undefined, driver: string): string {
  if (!command)
    throw new UsageError(
      `--driver ${driver} needs --command`,
      "name the worker program, e.g. --command flakegym-worker",
    );
  return command;
}

/** Configuration mistakes (bad image ref, loopback address) are usage errors here. */
function wrapConfig<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (
      err instanceof NomadWorkerError &&
      (err.code === "E_NOMAD_CONFIG" || err.code === "E_NOMAD_GATEWAY")
    ) {
      throw new UsageError(err.message, err.hint);
    }
    throw err;
  }
}
