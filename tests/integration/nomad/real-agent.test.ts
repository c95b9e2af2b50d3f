/**
 * The Nomad backend against a real `nomad agent -dev` on free ports, running the real Cline core
 * through cline-vendor's supervisor as a raw_exec job, driven by a scripted policy. Runs wherever
 * `nomad` (≥ 2.0.4) is on PATH; elsewhere it skips and says why.
 */
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createNomadBackend, createNomadClient, type NomadBackend } from "@flakegym/runner";
import {
  freePort,
  makeTempDir,
  type ScriptedPolicy,
  startScriptedPolicy,
  type TempDir,
  waitFor,
  writeThenComplete,
} from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawExecClineDriver } from "./cline-worker.js";

const nomadVersion = spawnSync("nomad", ["version"], { encoding: "utf8" });
const hasNomad = nomadVersion.status === 0;
/** A non-loopback address of this machine: what the allocation uses to reach the policy. */
const lanIp = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === "IPv4" && !i.internal)?.address;

if (!hasNomad) {
  console.warn(
    "nomad/real-agent.test.ts: skipped: no `nomad` binary on PATH " +
      `(${nomadVersion.error ? nomadVersion.error.message : `nomad version exited ${nomadVersion.status}`}). ` +
      "Install Nomad ≥ 2.0.4 to run the backend against a real agent; the Nomad double covers it meanwhile.",
  );
} else if (!lanIp) {
  console.warn(
    "nomad/real-agent.test.ts: skipped: this machine has no non-loopback IPv4 address for the gateway",
  );
}

describe.skipIf(!hasNomad || !lanIp)("NomadBackend against a real nomad agent -dev", () => {
  let dir: TempDir;
  let agent: ReturnType<typeof spawn> | undefined;
  let address: string;
  let policy: ScriptedPolicy;
  let backend: NomadBackend;
  const client = () => createNomadClient({ address });

  beforeAll(async () => {
    dir = await makeTempDir("flakegym-nomad-dev-");
    const [http, rpc, serf] = [await freePort(), await freePort(), await freePort()];
    address = `http://127.0.0.1:${http}`;
    const config = join(dir.path, "agent.hcl");
    writeFileSync(
      config,
      [
        `data_dir = "${join(dir.path, "data")}"`,
        `ports { http = ${http}\n rpc = ${rpc}\n serf = ${serf} }`,
        'plugin "raw_exec" { config { enabled = true } }',
      ].join("\n"),
    );
    agent = spawn("nomad", ["agent", "-dev", "-bind", "127.0.0.1", "-config", config], {
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    });
    let stderr = "";
    agent.stderr?.on("data", (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-4_000);
    });
    const ready = await waitFor(
      async () => {
        try {
          const nodes = (await (await fetch(`${address}/v1/nodes`)).json()) as {
            Status: string;
            Drivers?: Record<string, { Healthy: boolean }>;
          }[];
          return nodes.some((n) => n.Status === "ready" && n.Drivers?.raw_exec?.Healthy);
        } catch {
          return false;
        }
      },
      60_000,
      250,
    );
    if (!ready)
      throw new Error(`nomad agent -dev did not get a ready client with raw_exec within 60 s:\n${stderr}`);

    policy = await startScriptedPolicy(
      writeThenComplete("from-nomad.txt", "written by a Nomad worker", "done"),
      {
        host: "0.0.0.0",
      },
    );
    backend = createNomadBackend(
      {
        driver: rawExecClineDriver(),
        gatewayAdvertise: `${lanIp}:${policy.port}`,
        startTimeoutMs: 120_000,
        resources: { cpuMhz: 500 },
      },
      { client: client(), onProgress: () => {} },
    );
  }, 120_000);

  afterAll(async () => {
    await backend?.close();
    await policy?.close();
    if (agent?.pid) {
      try {
        process.kill(-agent.pid, "SIGINT");
      } catch {
        // gone
      }
      await new Promise((r) => setTimeout(r, 2_000));
      try {
        process.kill(-agent.pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    await dir?.cleanup();
  });

  it("starts a worker allocation whose real Cline core completes a scripted task; stop purges", async () => {
    const w = await backend.start({
      runId: "real-1",
      taskId: "hello",
      trajectoryId: "t1",
      profile: "dev-base",
      workspace: "",
      gateway: { url: `http://127.0.0.1:${policy.port}/v1` },
      limits: { memoryMb: 1024, pids: 512, wallClockMs: 300_000 },
      agent: true,
    });
    const grpc = createClineClient({ address: w.agentAddress! });
    try {
      const run = await runClineTask({
        client: grpc,
        prompt: "Create from-nomad.txt.",
        provider: { kind: "openai", baseUrl: w.policyBaseUrl!, modelId: "flakegym-scripted" },
        limits: { idleMs: 60_000 },
      });
      expect(run.outcome.kind).toBe("completed");
      expect(policy.requests.length).toBe(2);
      // The file is in the allocation's workspace (Nomad's fs API reads the alloc dir).
      const allocId = (w as { allocId?: string }).allocId!;
      const cat = await fetch(`${address}/v1/client/fs/cat/${allocId}?path=alloc/workspace/from-nomad.txt`);
      expect((await cat.text()).trim()).toBe("written by a Nomad worker");
    } finally {
      grpc.close();
      await w.stop();
    }
    const left = await client().jobs.list({ prefix: "flakegym-" });
    expect(left.data.map((j) => j.ID)).toEqual([]);
  });

  it("exec runs a command in a fresh raw_exec allocation", async () => {
    const w = await backend.start({
      runId: "real-1",
      taskId: "hello",
      trajectoryId: "score-1",
      profile: "dev-base",
      workspace: "",
      gateway: {},
      limits: { memoryMb: 256, pids: 64, wallClockMs: 60_000 },
      agent: false,
    });
    try {
      const r = await w.exec("echo hi; echo there >&2; exit 4");
      expect(r).toMatchObject({ exitCode: 4, stdout: "hi\n", stderr: "there\n", timedOut: false });
    } finally {
      await w.stop();
    }
  });
});
