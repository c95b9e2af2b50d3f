import { mkdir, writeFile } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { createNomadBackend, createNomadClient } from "@flakegym/runner";
import {
  type DoubleTaskInfo,
  freePort,
  makeTempDir,
  runCli,
  startNomadDouble,
  type TempDir,
} from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nomadRolloutDriver } from "../../packages/runner/src/rollout/nomad-driver.js";
import { readRun, TASK } from "./rollout-helpers.js";

/**
 * `rollout --backend nomad --images nix` with a container driver (FLAKEGYM_NOMAD_DRIVER=docker)
 * against the Nomad double: the real CLI submits the agent's job, naming the task's snapshot image
 * by the digest `images load --push` recorded (never the profile's image, never a tag), and a
 * scoring worker of the same image runs its commands as a one-shot job of that image.
 *
 * Not run end to end: the double has no container engine. It runs a container task that names a
 * command on the host, but an agent's task runs the image's own entrypoint (flakegym-worker boots
 * the core from /workspace in the image), which needs the flake's image (no Nix here builds it)
 * and Nomad's allocation mounts inside the container (/alloc, /local), which the double does not
 * emulate. So the agent's task fails as a driver failure saying so, and the test asserts the job
 * the runner submitted, field by field.
 */

const lanIp = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
if (!lanIp)
  console.warn(
    "e2e/rollout-nomad-images.test.ts: the CLI case skipped: no non-loopback IPv4 address to advertise the gateway on",
  );

const DIGEST = `sha256:${"5e".repeat(32)}`;
const SNAPSHOT_REF = `localhost:5000/flakegym/snapshot-${TASK}@${DIGEST}`;
const PROFILE_REF = `localhost:5000/flakegym/node-env@sha256:${"6f".repeat(32)}`;
/** Nomad's `${NAME}` interpolation, written without a template-looking literal. */
const nomadVar = (name: string) => ["$", "{", name, "}"].join("");
const NO_ENGINE = "the Nomad double has no container engine: an image's own entrypoint cannot run here";

/** images.json as `flakegym images load --push` writes it: the task's snapshot image and its profile's. */
function records() {
  const base = { flakeRef: "path:/src/flakegym", recordedAt: "2026-11-23T00:00:00.000Z" };
  return {
    images: [
      {
        kind: "profile",
        id: "node",
        package: "node-env-container",
        name: "flakegym/node-env",
        tag: "p".repeat(32),
        storePath: `/nix/store/${"p".repeat(32)}-stream-node-env`,
        imageId: "6f".repeat(32),
        loadedAs: `localhost/flakegym/node-env:${"p".repeat(32)}`,
        pushed: PROFILE_REF,
        ...base,
      },
      {
        kind: "snapshot",
        id: TASK,
        package: `snapshot-${TASK}`,
        name: `flakegym/snapshot-${TASK}`,
        tag: "s".repeat(32),
        storePath: `/nix/store/${"s".repeat(32)}-stream-snapshot-${TASK}`,
        imageId: "5e".repeat(32),
        loadedAs: `localhost/flakegym/snapshot-${TASK}:${"s".repeat(32)}`,
        pushed: SNAPSHOT_REF,
        ...base,
      },
    ],
  };
}

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-nomad-images-");
});
afterAll(async () => {
  await tmp?.cleanup();
});

describe("rollout --backend nomad --images nix with FLAKEGYM_NOMAD_DRIVER=docker (Nomad double)", () => {
  it.skipIf(!lanIp)(
    "submits the agent's job naming the task's snapshot image by its pushed digest",
    async () => {
      const cache = join(tmp.path, "cache");
      await mkdir(cache, { recursive: true });
      await writeFile(join(cache, "images.json"), JSON.stringify(records()));
      const started: DoubleTaskInfo[] = [];
      const double = await startNomadDouble({
        runTask: (t) => {
          started.push(t);
          return t.driver === "docker" ? { kind: "driver-failure", message: NO_ENGINE } : undefined;
        },
      });
      try {
        const out = join(tmp.path, "run");
        const port = await freePort(lanIp);
        const r = await runCli(
          [
            ...[
              "rollout",
              "--task",
              TASK,
              "--group-size",
              "1",
              "--backend",
              "nomad",
              "--images",
              "nix",
              "--policy",
              "gold",
            ],
            ...["--max-infra-retries", "0", "--gateway-advertise", `${lanIp}:${port}`, "--out", out],
          ],
          {
            timeoutMs: 120_000,
            env: {
              ...process.env,
              NOMAD_ADDR: double.url,
              FLAKEGYM_NOMAD_DRIVER: "docker",
              FLAKEGYM_CACHE: cache,
            },
          },
        );
        // the job the runner registered: one docker task running the snapshot image by digest,
        // with the image's own entrypoint (no command), the core's port published
        const registered = double.requests
          .filter((q) => q.method === "POST" && q.path === "/v1/jobs")
          .map((q) => (JSON.parse(q.body) as { Job: Job }).Job);
        expect(registered, r.stderr).toHaveLength(1);
        const job = registered[0]!;
        expect(job.Meta).toMatchObject({ flakegym_task: TASK, flakegym_profile: "node" });
        const [group] = job.TaskGroups;
        const [task] = group!.Tasks;
        expect(task!.Driver).toBe("docker");
        expect(task!.Config).toEqual({
          image: SNAPSHOT_REF,
          ports: ["grpc"],
          privileged: false,
          cap_drop: ["ALL"],
          security_opt: ["no-new-privileges"],
          readonly_rootfs: false,
          mount: [{ type: "tmpfs", target: "/tmp", readonly: false, tmpfs_options: { size: 536870912 } }],
          pids_limit: 256,
          // a network of the operator's that reaches only the gateway; the writable layer capped at the job's disk
          network_mode: "flakegym-egress",
          storage_opt: { size: "1024M" },
        });
        // the image's entrypoint (flakegym-worker) boots the core from these, on the image's /workspace
        expect((task as unknown as { Env: Record<string, string> }).Env).toEqual({
          FLAKEGYM_CORE_PORT: nomadVar("NOMAD_PORT_grpc"),
          FLAKEGYM_HOST_PORT: nomadVar("NOMAD_PORT_hostbridge"),
          FLAKEGYM_WORKSPACE: "/workspace",
          FLAKEGYM_CONFIG_DIR: `${nomadVar("NOMAD_ALLOC_DIR")}/cline`,
          FLAKEGYM_HOME: `${nomadVar("NOMAD_TASK_DIR")}/home`,
          // the route is the dispatch's (meta flakegym_policy_url): one parent serves every trajectory
          FLAKEGYM_POLICY_BASE_URL: nomadVar("NOMAD_META_flakegym_policy_url"),
          // the supervisor gates the core's gRPC with the dispatch's own token
          FLAKEGYM_CORE_TOKEN: nomadVar("NOMAD_META_flakegym_core_token"),
          FLAKEGYM_AGENT: "1",
        });
        // the work tree is the image's /workspace: nothing of this machine's fork is shipped
        expect(JSON.stringify(job)).not.toContain(tmp.path);
        expect(task!.Artifacts ?? []).toEqual([]);
        expect(started.map((t) => [t.driver, t.config.image])).toEqual([["docker", SNAPSHOT_REF]]);

        // the trajectory ends as the machinery's failure (no retries asked), naming the driver's error;
        // run.json names the image it was to run on
        const run = await readRun(out);
        expect(run.manifest.tasks?.[TASK]?.image).toMatchObject({
          kind: "snapshot",
          name: `flakegym/snapshot-${TASK}`,
          ref: SNAPSHOT_REF,
          digest: "5e".repeat(32),
        });
        expect(run.metrics.map((m) => m.outcome)).toEqual(["infra_error"]);
        expect(r.stderr).toContain(NO_ENGINE);
        expect(double.jobs()).toEqual([]);
      } finally {
        await double.close();
      }
    },
    150_000,
  );

  it("runs a scoring worker's commands as a one-shot job of the same snapshot image", async () => {
    // what the runner's wiring builds for --backend nomad --images nix (rollout/wire-backend.ts, worker-specs.ts): the
    // driver from FLAKEGYM_NOMAD_DRIVER, the scoring worker's image the task's recorded image
    const chosen = nomadRolloutDriver("docker", "nix");
    if (chosen.kind !== "container") throw new Error("docker must be a container driver");
    const double = await startNomadDouble();
    const client = createNomadClient({ address: double.url });
    const backend = createNomadBackend(
      { driver: chosen.driver, gatewayAdvertise: "10.0.0.5:8089", pollMs: 50 },
      { client },
    );
    try {
      const ws = join(tmp.path, "score-ws");
      await mkdir(ws, { recursive: true });
      const worker = await backend.start({
        runId: "r-images",
        taskId: TASK,
        trajectoryId: `${TASK}-t0-score`,
        profile: "node",
        workspace: ws,
        gateway: {},
        limits: { memoryMb: 1024, pids: 256, cpuSeconds: 60, diskMb: 256, wallClockMs: 60_000 },
        agent: false,
        image: SNAPSHOT_REF,
      });
      // the double runs a container task that names a command on this machine (no engine)
      const res = await worker.exec("echo scored", { timeoutMs: 30_000 });
      expect(res).toMatchObject({ exitCode: 0, timedOut: false });
      expect(res.stdout).toContain("scored");
      const jobs = double.requests
        .filter((q) => q.method === "POST" && q.path === "/v1/jobs")
        .map((q) => (JSON.parse(q.body) as { Job: Job }).Job);
      expect(jobs.length).toBeGreaterThan(0);
      for (const job of jobs) {
        for (const g of job.TaskGroups)
          for (const t of g.Tasks) {
            expect(t.Driver).toBe("docker");
            expect(t.Config.image).toBe(SNAPSHOT_REF);
          }
      }
      await worker.stop();
    } finally {
      await backend.close();
      client.close();
      await double.close();
    }
  }, 60_000);
});

interface Job {
  readonly Meta: Record<string, string>;
  readonly TaskGroups: readonly {
    readonly Tasks: readonly {
      readonly Driver: string;
      readonly Config: Record<string, unknown>;
      readonly Artifacts?: unknown[];
    }[];
  }[];
}
