import { readdir, readFile } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { freePort, makeTempDir, runCli, startNomadDouble, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, readScore, TASK } from "./rollout-helpers.js";

/**
 * `flakegym rollout --backend nomad` end to end: the real CLI process against the in-process Nomad
 * double (NOMAD_ADDR). Agent workers are raw_exec allocations running the real Cline core under the
 * supervisor on this machine; the core reaches the gateway at --gateway-advertise (a non-loopback
 * address of this machine); artifacts come back through the alloc signal and fs/cat APIs; each
 * score is one exec allocation. Everything is purged at the end.
 */

const lanIp = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
if (!lanIp)
  console.warn(
    "e2e/rollout-nomad.test.ts: skipped: no non-loopback IPv4 address to advertise the gateway on",
  );

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-nomad-");
});
afterAll(async () => {
  await tmp.cleanup();
});

describe("flakegym rollout --backend nomad (Nomad double, raw_exec, real core)", () => {
  it("refuses --backend nomad without --gateway-advertise, and a loopback one, naming the flag", async () => {
    const base = ["rollout", "--task", TASK, "--backend", "nomad", "--out", join(tmp.path, "refused")];
    const env = {
      ...process.env,
      NOMAD_ADDR: "http://127.0.0.1:1",
      FLAKEGYM_NOMAD_DRIVER: "raw_exec",
      FLAKEGYM_NOMAD_ALLOW_UNISOLATED: "1",
    };
    const none = await runCli(base, { timeoutMs: 60_000, env });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/--backend nomad needs --gateway-advertise <host:port>/);
    const loop = await runCli([...base, "--gateway-advertise", "127.0.0.1:8089"], { timeoutMs: 60_000, env });
    expect(loop.exitCode).not.toBe(0);
    expect(loop.stderr).toMatch(/--gateway-advertise '127\.0\.0\.1:8089' is a loopback address/);
  }, 130_000);

  it.skipIf(!lanIp)(
    "policy gold, group size 2: rewards 1, artifacts collected, every job purged",
    async () => {
      const double = await startNomadDouble();
      try {
        const out = join(tmp.path, "gold");
        const port = await freePort(lanIp);
        const r = await runCli(
          [
            "rollout",
            "--task",
            TASK,
            "--group-size",
            "2",
            "--concurrency",
            "2",
            "--policy",
            "gold",
            "--backend",
            "nomad",
            "--gateway-advertise",
            `${lanIp}:${port}`,
            "--out",
            out,
          ],
          {
            timeoutMs: 400_000,
            env: {
              ...process.env,
              NOMAD_ADDR: double.url,
              FLAKEGYM_NOMAD_DRIVER: "raw_exec",
              FLAKEGYM_NOMAD_ALLOW_UNISOLATED: "1",
            },
          },
        );
        expect(r.exitCode, r.stderr).toBe(0);
        expect(r.stderr).toMatch(/nomad: flakegym-\S+ core answers at \S+ \(\d+ ms\)/);
        const run = await readRun(out);
        expect(run.manifest.config.backend).toBe("nomad");
        expect(run.summary?.tasks[0]).toMatchObject({ taskId: TASK, rewards: [1, 1], group: "written" });
        for (const m of run.metrics)
          expect(m).toMatchObject({ outcome: "completed", boot_ok: true, reward: 1 });
        const t0 = join(out, "trajectories", `${TASK}-t0`);
        expect(await readdir(join(t0, "cline"))).toEqual(
          expect.arrayContaining([
            "api_conversation_history.json",
            "ui_messages.json",
            "task_metadata.json",
            "diff.patch",
            "manifest.json",
          ]),
        );
        // the diff was computed in the allocation and is the one scored
        const diff = await readFile(join(t0, "diff.patch"), "utf8");
        expect(diff).toContain("src/range.js");
        expect(await readFile(join(t0, "cline", "diff.patch"), "utf8")).toBe(diff);
        expect(await readScore(out, `${TASK}-t0`)).toMatchObject({ reward: 1, tests: { resolved: true } });
        // the agents ran as dispatched raw_exec jobs; the requests named the advertised gateway
        const dispatches = double.requests.filter((q) => q.method !== "GET" && q.path.endsWith("/dispatch"));
        expect(dispatches.length).toBeGreaterThanOrEqual(2);
        expect(double.requests.some((q) => q.body.includes(`${lanIp}:${port}`))).toBe(true);
        expect(double.jobs()).toEqual([]);
        await double.waitFor(() => double.liveTasks() === 0, 15_000);
      } finally {
        await double.close();
      }
    },
    420_000,
  );
});
