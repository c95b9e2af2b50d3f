import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createLocalBackend, forkTree, type WorkerSpec } from "@flakegym/runner";
import { findProcesses, makeTempDir, waitFor } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";
import { collectGarbageEvery } from "../../../packages/nomad-jobs/test/helpers/gc.js";

const hasBwrap = existsSync("/usr/bin/bwrap");
if (!hasBwrap) console.warn("local worker suite skipped: bubblewrap (bwrap) is not installed");

async function setup(name: string) {
  const dir = await makeTempDir(`flakegym-worker-${name}-`);
  const lower = join(dir.path, "snap");
  await mkdir(join(lower, "workspace"), { recursive: true });
  await writeFile(join(lower, "workspace", "f.txt"), "file\n");
  const fork = await forkTree(lower, { dest: join(dir.path, "fork"), quotaMb: 32 });
  const spec: WorkerSpec = {
    runId: "w",
    taskId: "t",
    trajectoryId: name,
    profile: "c",
    workspace: join(fork.tree, "workspace"),
    gateway: {},
    limits: { memoryMb: 256, pids: 64, cpuSeconds: 60, diskMb: 32, wallClockMs: 60_000 },
    agent: false,
  };
  return { dir, fork, spec, stateDir: join(dir.path, "state") };
}

describe.skipIf(!hasBwrap)("local backend", () => {
  it("exec runs in the workspace as the sandbox user with a clean environment", async () => {
    const { dir, fork, spec, stateDir } = await setup("exec");
    const worker = await createLocalBackend({ stateDir }).start(spec);
    try {
      const r = await worker.exec('pwd; id -un; cat f.txt; echo "$HOME $SECRET_FROM_HOST"', {
        env: { EXTRA: "1" },
      });
      expect(r).toMatchObject({ exitCode: 0, timedOut: false });
      expect(r.stdout).toBe("/workspace\nagent\nfile\n/sandbox-home \n");
      const cwd = await worker.exec("pwd && echo $EXTRA", { cwd: "/tmp", env: { EXTRA: "x" } });
      expect(cwd.stdout).toBe("/tmp\nx\n");
      const fail = await worker.exec("exit 7");
      expect(fail.exitCode).toBe(7);
    } finally {
      await worker.stop();
      await fork.release();
      await dir.cleanup();
    }
  });

  it("code under test in a scoring exec may make POSIX semaphores (/dev/shm is 1777, not root's 755)", async () => {
    const { dir, fork, spec, stateDir } = await setup("shm");
    const worker = await createLocalBackend({ stateDir }).start(spec);
    // as the scoring script runs the agent's code: apart (a root runner), as the sandbox user
    const py = `/usr/bin/python3 -c "import multiprocessing as m; m.Lock(); print('semaphore made')"`;
    try {
      const r = await worker.exec(
        `stat -c %a /dev/shm; if [ "$(id -u)" = 0 ]; then setpriv --reuid=1000 --regid=1000 --clear-groups --no-new-privs -- ${py}; else ${py}; fi`,
        { asInit: true },
      );
      expect(r.stdout, r.stderr).toBe("1777\nsemaphore made\n");
      expect(r.exitCode).toBe(0);
    } finally {
      await worker.stop();
      await fork.release();
      await dir.cleanup();
    }
  });

  it("a sandbox killed from outside is told apart from code inside killing itself", async () => {
    const { dir, fork, spec, stateDir } = await setup("outside");
    const worker = await createLocalBackend({ stateDir }).start(spec);
    try {
      const inside = await worker.exec("kill -9 $$");
      expect(inside.exitCode).toBe(137);
      expect(inside.sandboxKilled).toBeUndefined();
      const marker = `flakegym-outside-${process.pid}`;
      const running = worker.exec(`sleep 30 # ${marker}`);
      let sandbox: { pid: number } | undefined;
      expect(
        await waitFor(
          async () => {
            sandbox = (await findProcesses(marker)).find((p) => /^(\S*\/)?bwrap /.test(p.cmdline));
            return sandbox !== undefined;
          },
          10_000,
          50,
        ),
      ).toBe(true);
      process.kill(sandbox!.pid, "SIGKILL");
      const outside = await running;
      expect(outside).toMatchObject({ sandboxKilled: true, timedOut: false });
    } finally {
      await worker.stop();
      await fork.release();
      await dir.cleanup();
    }
  });

  it("stop() kills everything the worker started (checked in the process table) and is idempotent", async () => {
    const { dir, fork, spec, stateDir } = await setup("stop");
    const worker = await createLocalBackend({ stateDir }).start(spec);
    const marker = `flakegym-stop-marker-${process.pid}`;
    const running = worker.exec(
      `sh -c 'sleep 1000; echo ${marker}' & setsid sh -c 'sleep 1001 # ${marker}' & wait`,
    );
    expect(await waitFor(async () => (await findProcesses(marker)).length >= 2, 10_000, 50)).toBe(true);
    await worker.stop();
    const r = await running;
    expect(r.exitCode).not.toBe(0);
    expect(await findProcesses(marker)).toEqual([]);
    expect(await worker.exited).toEqual({ reason: "stopped" });
    await worker.stop();
    expect((await worker.exec("true")).exitCode).toBe(125);
    // the worker's cgroup is gone
    const cg = (await import("node:fs")).readdirSync("/sys/fs/cgroup/pids/flakegym", { withFileTypes: true });
    expect(cg.map((d) => d.name)).not.toContain(worker.id);
    await fork.release();
    await dir.cleanup();
  });

  it("without bubblewrap it refuses, saying how to install it, unless --unsafe-no-sandbox", async () => {
    const { dir, fork, spec, stateDir } = await setup("nobwrap");
    const saved = process.env.FLAKEGYM_BWRAP;
    process.env.FLAKEGYM_BWRAP = "none";
    try {
      await expect(createLocalBackend({ stateDir }).start(spec)).rejects.toMatchObject({
        code: "E_NO_SANDBOX",
        hint: expect.stringMatching(
          /sh scripts\/ensure-system-deps.*apt-get install -y bubblewrap.*--unsafe-no-sandbox/,
        ),
      });
      const backend = createLocalBackend({ stateDir, unsafeNoSandbox: true });
      expect((await backend.describe()).sandbox).toBe("NONE (--unsafe-no-sandbox)");
      const worker = await backend.start(spec);
      try {
        const r = await worker.exec("cat f.txt && pwd");
        expect(r.stdout).toBe(`file\n${spec.workspace}\n`);
      } finally {
        await worker.stop();
      }
    } finally {
      if (saved === undefined) delete process.env.FLAKEGYM_BWRAP;
      else process.env.FLAKEGYM_BWRAP = saved;
      await fork.release();
      await dir.cleanup();
    }
  });

  it("an exec's time limit and a caller's abort both end it while garbage collections run", async () => {
    const { dir, fork, spec, stateDir } = await setup("gc");
    const worker = await createLocalBackend({ stateDir }).start(spec);
    const stopGc = collectGarbageEvery();
    try {
      const caller = new AbortController();
      let t0 = performance.now();
      const timed = await worker.exec("sleep 30", { timeoutMs: 400, signal: caller.signal });
      expect(timed.timedOut).toBe(true);
      expect(performance.now() - t0).toBeLessThan(10_000);
      t0 = performance.now();
      setTimeout(() => caller.abort(new Error("Ctrl-C")), 300);
      const aborted = await worker.exec("sleep 30", { signal: caller.signal });
      expect(aborted).toMatchObject({ timedOut: false });
      expect(aborted.exitCode).not.toBe(0);
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      stopGc();
      await worker.stop();
      await fork.release();
      await dir.cleanup();
    }
  }, 60_000);

  it("describe() reports the sandbox and cgroup mode", async () => {
    const d = await createLocalBackend().describe();
    expect(d.sandbox).toMatch(/^bubblewrap \(bubblewrap \d/);
    expect(["v1", "v2", "none"]).toContain(d.cgroups);
  });
});
