/**
 * The whole Nomad path with the real Cline core, on the Nomad double: a raw_exec worker job runs
 * cline-vendor's supervisor (real cline-host + cline-core) on its dynamic port, the backend waits
 * until the core answers gRPC, a scripted policy reached through the advertised gateway address
 * drives a task to completion, and stop purges everything.
 */
import { networkInterfaces } from "node:os";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createNomadBackend, createNomadClient } from "@flakegym/runner";
import { startNomadDouble, startScriptedPolicy, writeThenComplete } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";
import { rawExecClineDriver } from "./cline-worker.js";

const lanIp = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
if (!lanIp)
  console.warn("nomad/real-core.test.ts: skipped: no non-loopback IPv4 address to advertise the gateway on");

describe.skipIf(!lanIp)("a Nomad worker running the real Cline core (Nomad double, raw_exec)", () => {
  it("starts, completes a scripted task through the advertised gateway, and is purged", async () => {
    const double = await startNomadDouble();
    const policy = await startScriptedPolicy(writeThenComplete("nomad.txt", "from a nomad worker", "done"), {
      host: "0.0.0.0",
    });
    const backend = createNomadBackend(
      {
        driver: rawExecClineDriver(),
        gatewayAdvertise: `${lanIp}:${policy.port}`,
        startTimeoutMs: 90_000,
        pollMs: 5_000,
      },
      { client: createNomadClient({ address: double.url }) },
    );
    try {
      const w = await backend.start({
        runId: "core-1",
        taskId: "hello",
        trajectoryId: "t1",
        profile: "dev-base",
        workspace: "",
        gateway: { url: `http://127.0.0.1:${policy.port}/v1` },
        limits: { memoryMb: 1024, pids: 512, wallClockMs: 120_000 },
        agent: true,
      });
      expect(w.policyBaseUrl).toBe(`http://${lanIp}:${policy.port}/v1`);
      // The core listens behind the supervisor's gate: a caller without this worker's token (another
      // trajectory, anyone reaching the node's port) is refused; the runner's client carries it.
      expect(w.agentToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const intruder = createClineClient({ address: w.agentAddress! });
      const forger = createClineClient({ address: w.agentAddress!, token: "not-the-token" });
      try {
        for (const c of [intruder, forger]) {
          const e = await c.state.getLatestState({ deadlineMs: 5_000 }).then(
            () => undefined,
            (err: unknown) => err as { code?: number; grpcCode?: number; message: string },
          );
          expect(e?.message).toMatch(/UNAUTHENTICATED|per-trajectory token|16/);
        }
      } finally {
        intruder.close();
        forger.close();
      }
      const grpc = createClineClient({ address: w.agentAddress!, token: w.agentToken! });
      try {
        const run = await runClineTask({
          client: grpc,
          prompt: "Create nomad.txt.",
          provider: { kind: "openai", baseUrl: w.policyBaseUrl!, modelId: "flakegym-scripted" },
          limits: { idleMs: 60_000 },
        });
        expect(run.outcome).toMatchObject({ kind: "completed", result: "done" });
        expect(policy.requests).toHaveLength(2);
        const allocId = (w as { allocId?: string }).allocId!;
        const cat = await fetch(`${double.url}/v1/client/fs/cat/${allocId}?path=alloc/workspace/nomad.txt`);
        expect(await cat.text()).toBe("from a nomad worker");
      } finally {
        grpc.close();
        await w.stop();
      }
      expect(double.jobs()).toEqual([]);
      // the supervisor took the host and the core down with it
      await double.waitFor(() => double.liveTasks() === 0, 15_000);
    } finally {
      await backend.close();
      await policy.close();
      await double.close();
    }
  });
});
