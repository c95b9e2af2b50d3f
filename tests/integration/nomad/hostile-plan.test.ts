import { connect } from "node:http2";
import { fileURLToPath } from "node:url";
import { type NomadBackendOptionsInput, SUPERVISOR_DIFF_PATH, workerJobFactProblems } from "@flakegym/runner";
import { describe, expect, it } from "vitest";
import { nomadBackendHarness } from "./backend-harness.js";
import { SUPERVISOR } from "./cline-worker.js";

/**
 * Issue 33's hostile plan on the Nomad double, per driver: what an agent in one trajectory can do
 * to another. The double runs raw_exec workers as real processes with the real supervisor (a tiny
 * HTTP/2 fixture stands in for the 45 MB core), so the per-trajectory core gate is exercised for
 * real. Container drivers on the double run on the host (it has no container filesystem), so for
 * them the plan checks what Nomad would be told: the registered jobs give the container no path
 * to the host (no bind mounts or volumes), a dedicated network, no secret; the real-agent suite is
 * where a real Nomad runs. The API-key search per driver is isolation.test.ts.
 */

const { setup, spec } = nomadBackendHarness({ runId: "run-hostile", memoryMb: 1024 });

const fixture = (n: string) =>
  fileURLToPath(new URL(`../../../packages/cline-vendor/test/fixtures/${n}`, import.meta.url));

/** A raw_exec agent worker: the real supervisor gating a fixture core on the allocation's port. */
const gatedWorker = (): NomadBackendOptionsInput["driver"] => ({
  driver: "raw_exec",
  command: "/bin/sh",
  allowUnisolated: true,
  args: [
    "-c",
    `exec "${process.execPath}" "${SUPERVISOR}" --host-bin "${fixture("fake-host.mjs")}" --core-js "${fixture("h2-core.mjs")}"` +
      ' --node-path /nonexistent --workspace "$FLAKEGYM_WORKSPACE" --config "$FLAKEGYM_CONFIG_DIR"' +
      ' --core-address "$NOMAD_IP_grpc:$FLAKEGYM_CORE_PORT" --host-port "$FLAKEGYM_HOST_PORT"' +
      ' --diff-dir "$FLAKEGYM_CONFIG_DIR/flakegym"',
  ],
});

/** One HTTP/2 call as any local process can make it: its gRPC status (or HTTP status). */
function call(address: string, path: string, authorization?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = connect(`http://${address}`);
    session.on("error", reject);
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      "flakegym-seq": "1",
      ...(authorization ? { authorization } : {}),
    });
    let status = "";
    req.on("response", (h) => {
      status = String(h["grpc-status"] ?? `http ${h[":status"]}`);
    });
    req.on("trailers", (t) => {
      if (t["grpc-status"] !== undefined) status = String(t["grpc-status"]);
    });
    req.on("data", () => {});
    req.on("end", () => {
      session.close();
      resolve(status);
    });
    req.on("error", reject);
    req.end("x");
  });
}

describe("a hostile agent cannot drive another trajectory's core (raw_exec, the real supervisor's gate)", () => {
  it("B's core and B's diff answer UNAUTHENTICATED to no token and to A's token; B's own runner gets through", async () => {
    const { backend } = await setup({}, { driver: gatedWorker() });
    const a = await backend.start(spec());
    const b = await backend.start(spec());
    try {
      expect(a.agentToken).toBeTruthy();
      expect(b.agentToken).not.toBe(a.agentToken);
      const state = "/cline.StateService/getLatestState";
      // raw_exec shares the node's network: the agent can reach B's published port
      expect(await call(b.agentAddress!, state)).toBe("16");
      expect(await call(b.agentAddress!, state, `Bearer ${a.agentToken}`)).toBe("16");
      expect(await call(b.agentAddress!, SUPERVISOR_DIFF_PATH, `Bearer ${a.agentToken}`)).toBe("16");
      // the runner that holds B's token drives B's core
      expect(await call(b.agentAddress!, state, `Bearer ${b.agentToken}`)).toBe("0");
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describe("container drivers: the job Nomad is given leaves the agent no way out", () => {
  for (const driver of ["docker", "podman"] as const) {
    it(`${driver}: no host mounts, a dedicated network, no secret, memory and disk as Nomad enforces them`, async () => {
      const { double, backend } = await setup({}, { driver: { driver } });
      const w = await backend.start(spec());
      try {
        const registered = double.jobs();
        expect(registered.length).toBeGreaterThan(0);
        for (const j of registered) expect(workerJobFactProblems(j.spec as never), j.ID).toEqual([]);
      } finally {
        await w.stop();
      }
    });
  }
});
