import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { createLocalBackend, type Fork, forkTree, type Worker, type WorkerSpec } from "@flakegym/runner";
import { findProcesses, makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idleAgent } from "./idle-agent.js";

// A hostile agent, played by shell commands through worker.exec (the same sandbox shape the Cline
// core runs in). Every attempt must be contained, leave the host and the other worker alone, and
// end as data (an ExecResult or a WorkerExit), never as a crash of the runner.

const hasBwrap = existsSync("/usr/bin/bwrap");
if (!hasBwrap)
  console.warn(
    "security suite skipped: bubblewrap (bwrap) is not installed — run sh scripts/ensure-system-deps",
  );

describe.skipIf(!hasBwrap)("hostile commands in a local worker", () => {
  let tmp: TempDir;
  let lower: string;
  let hostServer: Server;
  let hostPort = 0;
  let hostConnections = 0;
  let otherGateway: string;
  let otherGatewayConnections = 0;
  const forks: Fork[] = [];
  const workers: Worker[] = [];
  const backendDir = () => join(tmp.path, "workers");

  async function startWorker(
    name: string,
    limits: Partial<WorkerSpec["limits"]> = {},
    quotaMb?: number,
    method?: "copy",
    agent = false,
  ) {
    const fork = await forkTree(lower, {
      dest: join(tmp.path, "forks", name),
      ...(quotaMb ? { quotaMb } : {}),
      ...(method ? { method } : {}),
    });
    forks.push(fork);
    const worker = await createLocalBackend({
      stateDir: backendDir(),
      watchdogIntervalMs: 200,
      ...(agent ? { agent: idleAgent } : {}),
    }).start({
      runId: "security",
      taskId: "hostile",
      trajectoryId: name,
      profile: "c",
      workspace: join(fork.tree, "workspace"),
      // no gateway (a socket path given is bound, so it must be served); agent workers run idleAgent
      gateway: {},
      limits: { memoryMb: 256, pids: 64, cpuSeconds: 60, diskMb: 64, wallClockMs: 120_000, ...limits },
      agent,
    });
    workers.push(worker);
    return { worker, fork };
  }

  let a: Worker;
  let b: Worker;
  let bWorkspace: string;

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-security-");
    lower = join(tmp.path, "snapshot");
    await mkdir(join(lower, "workspace"), { recursive: true });
    await writeFile(join(lower, "workspace", "README"), "snapshot file\n");
    hostServer = createServer((s) => {
      hostConnections++;
      s.end("host secret\n");
    });
    await new Promise<void>((r) => hostServer.listen(0, "127.0.0.1", r));
    hostPort = (hostServer.address() as { port: number }).port;
    otherGateway = join(tmp.path, "other-gateway.sock");
    const gw = createServer((s) => {
      otherGatewayConnections++;
      s.end();
    });
    await new Promise<void>((r) => gw.listen(otherGateway, r));
    ({ worker: a } = await startWorker("a", {}, 64));
    const started = await startWorker("b", {}, 64);
    b = started.worker;
    bWorkspace = join(started.fork.tree, "workspace");
    await writeFile(join(bWorkspace, "b-secret.txt"), "only b\n");
  });

  afterAll(async () => {
    for (const w of workers) await w.stop();
    for (const f of forks) await f.release();
    hostServer?.close();
    await tmp?.cleanup();
  });

  const otherWorkerStillFine = async () => {
    const r = await b.exec("cat b-secret.txt && echo alive");
    expect(r).toMatchObject({ exitCode: 0, stdout: "only b\nalive\n" });
  };

  it("cannot read /etc/shadow (it exists on the host)", async () => {
    expect(existsSync("/etc/shadow")).toBe(true);
    const r = await a.exec("cat /etc/shadow");
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/No such file/);
  });

  it("cannot see the runner's repository or HOME", async () => {
    const repoFile = join(REPO_ROOT, "package.json");
    expect(existsSync(repoFile)).toBe(true);
    const r = await a.exec(
      `test -e '${repoFile}' && echo VISIBLE; ls -A /root 2>&1; ls -A '${tmp.path}' 2>&1; echo done`,
    );
    expect(r.stdout).not.toContain("VISIBLE");
    expect(r.stdout).toMatch(/\/root.*No such file/);
    expect(r.stdout).toMatch(/No such file/);
  });

  it("cannot see or touch another worker's workspace", async () => {
    const r = await a.exec(
      `ls '${bWorkspace}' 2>&1; cat /workspace/b-secret.txt 2>&1; echo marker > '${bWorkspace}/from-a' 2>&1; echo done`,
    );
    expect(r.stdout).not.toContain("only b");
    expect(existsSync(join(bWorkspace, "from-a"))).toBe(false);
    await otherWorkerStillFine();
  });

  it("cannot write outside its workspace; /tmp is private", async () => {
    const r = await a.exec(
      "for p in /usr/evil /etc/evil /opt/evil /evil /var/evil; do (echo x > $p) 2>/dev/null && echo WROTE $p; done; echo tmp > /tmp/private && echo ok-tmp; echo ws > /workspace/mine && echo ok-ws",
    );
    expect(r.stdout).not.toContain("WROTE");
    for (const p of ["/usr/evil", "/etc/evil", "/opt/evil", "/evil"]) expect(existsSync(p)).toBe(false);
    expect(r.stdout).toContain("ok-tmp");
    expect(r.stdout).toContain("ok-ws");
    expect(existsSync("/tmp/private")).toBe(false);
    const again = await a.exec("cat /tmp/private 2>&1 || echo gone");
    expect(again.stdout).toContain("gone"); // each exec gets a fresh /tmp
  });

  it("cannot reach the host's loopback ports", async () => {
    const r = await a.exec(
      `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${hostPort} && cat <&3' 2>&1; echo "exit=$?"`,
    );
    expect(r.stdout).not.toContain("host secret");
    expect(r.stdout).toMatch(/Connection refused/);
    expect(hostConnections).toBe(0);
  });

  it("cannot reach another trajectory's gateway socket", async () => {
    const script = `require("net").connect(${JSON.stringify(otherGateway)}).on("connect",()=>{console.log("CONNECTED");process.exit(0)}).on("error",e=>{console.log(e.code);process.exit(1)})`;
    const r = await a.exec(`node -e '${script}'`);
    expect(r.stdout).not.toContain("CONNECTED");
    expect(r.stdout.trim()).toBe("ENOENT");
    expect(otherGatewayConnections).toBe(0);
  });

  const CONNECT_OUT = `node -e 'const s=require("net").connect(80,"192.0.2.1");s.on("connect",()=>{console.log("CONNECTED");process.exit(0)});s.on("error",e=>{console.log(e.code);process.exit(1)});setTimeout(()=>{console.log("TIMEOUT");process.exit(2)},5000)'; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "`;

  it("cannot reach an outside address: fails at once, no network at all", async () => {
    // The agent's sandbox (agent: true; sandboxNetworkOf never gives it the dropping namespace).
    // 192.0.2.1 is TEST-NET-1 (never routed). With only loopback there is no route, so connect()
    // fails before any packet could leave.
    const agentWorker = await startWorker("agent-net", {}, undefined, undefined, true);
    const r = await agentWorker.worker.exec(CONNECT_OUT);
    expect(r.stdout).toMatch(/^ENETUNREACH/);
    expect(r.stdout).not.toContain("CONNECTED");
    expect(r.durationMs).toBeLessThan(5000);
    expect(r.stdout.trim().split("\n").slice(1)).toEqual(["lo"]); // the only interface is loopback
  });

  it("a scoring worker cannot reach an outside address either (dropping namespace when root)", async () => {
    // Scoring workers (agent: false) get the dropping namespace when the runner is root
    // (swebench-specs: tests expecting a connect timeout get one); otherwise loopback-only.
    const r = await a.exec(CONNECT_OUT);
    expect(r.stdout).not.toContain("CONNECTED");
    expect(r.stdout).toMatch(process.geteuid?.() === 0 ? /^TIMEOUT/ : /^ENETUNREACH/);
    expect(r.stdout.trim().split("\n").slice(1)).toEqual(["lo"]); // still no interface but loopback
    expect(hostConnections).toBe(0);
  });

  it("a fork bomb is bounded by the pids limit and leaves nothing behind", async () => {
    const { worker } = await startWorker("bomb", { pids: 48 });
    const r = await worker.exec("bomb() { bomb | bomb & }; bomb; sleep 3", { timeoutMs: 8000 });
    expect(r.stderr).toMatch(/fork|Resource temporarily unavailable/i);
    // Issue 46 (faults branch): a refused fork ends the worker as the pids limit, not retried.
    expect(await worker.exited).toMatchObject({ reason: "pids" });
    const after = await worker.exec("echo still-works");
    expect(after.exitCode).toBe(125);
    expect(after.stdout).toBe("");
    // Nothing of it survives the worker, and the host and the other worker are unaffected.
    expect(await findProcesses("bomb")).toEqual([]);
    await otherWorkerStillFine();
  });

  it("filling the disk stops at the quota (overlay on a size-limited tmpfs)", async () => {
    const r = await a.exec("dd if=/dev/zero of=/workspace/big bs=1M count=500 2>&1; echo exit=$?");
    expect(r.stdout).toMatch(/No space left on device/);
    const size = await a.exec("du -sm /workspace/big | cut -f1");
    expect(Number(size.stdout.trim())).toBeLessThanOrEqual(64);
    await a.exec("rm -f /workspace/big");
    await otherWorkerStillFine();
  });

  it("filling the disk of a plain-copy fork ends the worker (file-size limit + watchdog)", async () => {
    const { worker } = await startWorker("disk", { diskMb: 20 }, undefined, "copy");
    const one = await worker.exec("dd if=/dev/zero of=/workspace/one bs=1M count=100 2>&1; echo exit=$?");
    expect(one.stdout).toMatch(/File size limit exceeded|exit=153/);
    // Many files each under the per-file limit: the watchdog sees the total and ends the worker.
    void worker.exec(
      "for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/workspace/f$i bs=1M count=15 2>/dev/null; done; sleep 30",
    );
    const exit = await worker.exited;
    expect(exit?.reason).toBe("disk");
    const after = await worker.exec("echo hi");
    expect(after.exitCode).toBe(125);
  });

  it("sleeping forever hits the wall clock and ends as data", async () => {
    const { worker } = await startWorker("sleeper", { wallClockMs: 1500 });
    const r = await worker.exec("sleep 98765");
    expect(r.timedOut).toBe(true);
    expect(r.durationMs).toBeLessThan(5000);
    expect(await worker.exited).toMatchObject({ reason: "wall_clock" });
    expect(await findProcesses("sleep 98765")).toEqual([]);
  });

  it("a memory hog is killed at the memory limit", async () => {
    const { worker } = await startWorker("hog", { memoryMb: 96 });
    const r = await worker.exec(`python3 -c "a = bytearray(512 * 1024 * 1024); print('ALLOCATED')"`);
    expect(r.stdout).not.toContain("ALLOCATED");
    expect([137, 1]).toContain(r.exitCode);
    expect(await worker.exited).toMatchObject({ reason: "memory" });
    await otherWorkerStillFine();
  });

  it("a CPU burner is stopped at the CPU-time limit", async () => {
    const { worker } = await startWorker("burner", { cpuSeconds: 1, wallClockMs: 30_000 });
    const r = await worker.exec("while :; do :; done", { timeoutMs: 20_000 });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode).not.toBe(0);
    expect((await worker.exited)?.reason).toBe("cpu_time");
  });
});
