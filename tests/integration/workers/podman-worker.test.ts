import { existsSync } from "node:fs";
import { chown, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createPodmanBackend, forkTree, type WorkerSpec, writeBaseRootfs } from "@flakegym/runner";
import { makeTempDir, say, startScriptedPolicy, type TempDir, xmlTool } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The podman backend against real podman + runc. No registry is reachable here, so the test image
// is `podman import`ed from a tiny rootfs (merged-/usr symlinks, passwd, empty mount points) and the
// host's /usr is bind-mounted read-only as the toolchain.
const missing = ["/usr/bin/podman", "/usr/sbin/runc"].filter((p) => !existsSync(p));
if (missing.length)
  console.warn(`podman suite skipped: missing ${missing.join(", ")} — apt-get install podman runc`);

const IMAGE = "localhost/flakegym-test-base:latest";

describe.skipIf(missing.length > 0)("podman backend (real podman, runc)", () => {
  let tmp: TempDir;
  const conf = () => join(tmp.path, "podman", "containers.conf");

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-podman-");
    // the backend's own minimal rootfs (merged-/usr links, passwd, mount points), under the test's name
    const tar = await writeBaseRootfs(tmp.path);
    await mkdir(join(tmp.path, "podman"), { recursive: true });
    await writeFile(conf(), "[containers]\ndefault_ulimits = []\n");
    await execa("podman", ["import", tar, IMAGE], {
      env: { CONTAINERS_CONF: conf() },
    });
  });
  afterAll(async () => {
    await tmp?.cleanup();
  });

  async function start(
    name: string,
    limits: Partial<WorkerSpec["limits"]> = {},
    agent?: { socketPath: string },
    readOnlyFiles?: WorkerSpec["readOnlyFiles"],
  ) {
    const lower = join(tmp.path, `snap-${name}`);
    await mkdir(join(lower, "workspace"), { recursive: true });
    await writeFile(join(lower, "workspace", "f.txt"), "file\n");
    const fork = await forkTree(lower, { dest: join(tmp.path, `fork-${name}`), quotaMb: 32 });
    const backend = createPodmanBackend({
      image: IMAGE,
      stateDir: join(tmp.path, "podman"),
      binds: [{ src: "/usr", dest: "/usr" }],
    });
    const worker = await backend
      .start({
        runId: "podman",
        taskId: "t",
        trajectoryId: name,
        profile: "c",
        workspace: join(fork.tree, "workspace"),
        gateway: agent ?? {},
        limits: { memoryMb: 128, pids: 48, cpuSeconds: 60, diskMb: 32, wallClockMs: 60_000, ...limits },
        agent: agent !== undefined,
        ...(readOnlyFiles ? { readOnlyFiles } : {}),
      })
      .catch(async (err: unknown) => {
        await fork.release();
        throw err;
      });
    return { worker, fork, backend };
  }

  it("runs commands in the workspace as its owner, no capabilities, read-only root, no network", async () => {
    const { worker, fork, backend } = await start("basic");
    try {
      expect((await backend.describe()).runtime).toBe("/usr/sbin/runc");
      const r = await worker.exec(
        "pwd; id -u; cat f.txt; grep CapEff /proc/self/status; (echo x > /evil) 2>&1; cat /etc/shadow 2>&1; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
      );
      expect(r.exitCode).toBe(0);
      const lines = r.stdout.trim().split("\n");
      expect(lines.slice(0, 4)).toEqual([
        "/workspace",
        String(process.getuid?.()),
        "file",
        "CapEff:\t0000000000000000",
      ]);
      expect(r.stdout).toMatch(/Read-only file system/);
      expect(r.stdout).toMatch(/\/etc\/shadow: No such file/);
      expect(lines.at(-1)).toBe("lo");
      const w = await worker.exec("echo out > made.txt && cat made.txt");
      expect(w.stdout).toBe("out\n");
      expect(existsSync(join(fork.tree, "workspace", "made.txt"))).toBe(true);
    } finally {
      await worker.stop();
      await fork.release();
    }
  });

  it.skipIf(process.getuid?.() !== 0)(
    "a scoring worker's hidden test file, owned by nobody and bound read-only, cannot be chmod'ed, written, unlinked or renamed (chown needs root)",
    async () => {
      const host = join(tmp.path, "hidden-0");
      await writeFile(host, "hidden\n", { mode: 0o444 });
      await chown(host, 65534, 65534);
      const { worker, fork } = await start("ro", {}, undefined, [{ hostPath: host, path: "tests/t.py" }]);
      try {
        const r = await worker.exec(
          "stat -c '%u %a' tests/t.py; chmod u+w tests/t.py 2>&1; (echo x > tests/t.py) 2>&1; rm -f tests/t.py 2>&1; mv tests/t.py tests/u.py 2>&1; cat tests/t.py",
        );
        expect(r.stdout.split("\n")[0]).toBe("65534 444");
        expect(r.stdout).toMatch(/chmod: .*(Read-only file system|Operation not permitted)/);
        expect(r.stdout).toMatch(/rm: cannot remove .*(busy|Read-only)/i);
        expect(r.stdout).toMatch(/mv: cannot move .*(busy|Read-only)/i);
        expect(r.stdout.trim().split("\n").at(-1)).toBe("hidden");
        expect(await readFile(host, "utf8")).toBe("hidden\n");
      } finally {
        await worker.stop();
        await fork.release();
      }
    },
  );

  it("bounds a fork bomb with --pids-limit and a sleeper with the exec timeout", async () => {
    const { worker, fork } = await start("bomb");
    try {
      const bomb = await worker.exec("bomb() { bomb | bomb & }; bomb; sleep 2", { timeoutMs: 6000 });
      expect(bomb.stderr).toMatch(/fork|Resource temporarily unavailable/i);
      const sleeper = await worker.exec("sleep 100", { timeoutMs: 1500 });
      expect(sleeper.timedOut).toBe(true);
      expect((await worker.exec("echo alive")).stdout).toBe("alive\n");
    } finally {
      await worker.stop();
      await fork.release();
    }
  });

  it("code inside cannot end an exec-only container's PID 1: its kills end its own commands at most", async () => {
    const { worker, fork } = await start("init");
    try {
      const init = await worker.exec("grep -E '^Sig(Ign|Cgt)' /proc/1/status");
      // every signal that ends a process ignored (SigIgn), only SIGCHLD caught (the shell's reaping)
      expect(init.stdout).toMatch(/SigCgt:\t0000000000010000/);
      for (const attack of [
        "kill 1; kill -TERM 1; kill -INT 1; kill -HUP 1; kill -9 1; kill -STOP 1",
        "for s in $(seq 1 31); do kill -$s 1; done 2>/dev/null; true",
        "kill -9 -1",
        "kill -- -1",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
        "for q in /proc/[0-9]*; do kill -KILL ${q#/proc/}; done",
      ]) {
        const r = await worker.exec(attack);
        expect(r.sandboxKilled, `${attack}: exit ${r.exitCode}`).toBeUndefined();
        const alive = await worker.exec("echo alive");
        expect(alive.stdout, `after ${attack}: ${alive.stderr}`).toBe("alive\n");
      }
    } finally {
      await worker.stop();
      await fork.release();
    }
  });

  it("a kill from outside mid-exec is sandboxKilled (retried), and ends the worker", async () => {
    const { worker, fork } = await start("outside");
    try {
      const exec = worker.exec("sleep 30", { timeoutMs: 20_000 });
      await new Promise((r) => setTimeout(r, 1500));
      await execa("podman", ["kill", "-s", "KILL", worker.id], { env: { CONTAINERS_CONF: conf() } });
      const r = await exec;
      expect(r).toMatchObject({ sandboxKilled: true, timedOut: false });
      expect(await worker.exited).toMatchObject({
        reason: "crashed",
        detail: expect.stringContaining("137"),
      });
      expect(await worker.exec("true")).toMatchObject({ exitCode: 125, sandboxKilled: true });
    } finally {
      await worker.stop();
      await fork.release();
    }
  });

  it("an exec cut at its deadline in a paused container (podman pause: frozen from outside) is sandboxStopped, not the code's timeout", async () => {
    const { worker, fork } = await start("paused");
    const env = { CONTAINERS_CONF: conf() };
    try {
      // a plain timeout first: the code's own (nothing frozen)
      expect(await worker.exec("sleep 30", { timeoutMs: 2_000 })).toMatchObject({ timedOut: true });
      expect((await worker.exec("sleep 30", { timeoutMs: 2_000 })).sandboxStopped).toBeUndefined();
      const exec = worker.exec("sleep 30", { timeoutMs: 4_000 });
      await new Promise((r) => setTimeout(r, 1500));
      await execa("podman", ["pause", worker.id], { env });
      const r = await exec;
      expect(r, JSON.stringify(r)).toMatchObject({ timedOut: true, sandboxStopped: true });
    } finally {
      await execa("podman", ["unpause", worker.id], { env, reject: false });
      await worker.stop();
      await fork.release();
    }
  }, 120_000);

  it("stop() removes the container; the wall clock ends the worker as data", async () => {
    const { worker, fork } = await start("wall", { wallClockMs: 2000 });
    expect(await worker.exited).toMatchObject({ reason: "wall_clock" });
    const ps = await execa("podman", ["ps", "-a", "--format", "{{.Names}}"], {
      env: { CONTAINERS_CONF: conf() },
    });
    expect(ps.stdout.split("\n")).not.toContain(worker.id);
    expect((await worker.exec("true")).exitCode).toBe(125);
    await fork.release();
  });

  it("a memory kill of the container's PID 1 ends the worker at its memory limit, not as a crash", async () => {
    const { worker, fork } = await start("oom", { memoryMb: 64, wallClockMs: 30_000 });
    try {
      // PID 1 is made the OOM killer's first choice, then memory is filled past the limit
      const adj = await worker.exec("echo 1000 > /proc/1/oom_score_adj; cat /proc/1/oom_score_adj");
      expect(adj.stdout.trim(), adj.stderr).toBe("1000");
      // one 300 MB line: tail keeps it whole in memory
      const hog = worker.exec("head -c 300000000 /dev/zero | tail", { timeoutMs: 20_000 });
      expect(await worker.exited).toMatchObject({
        reason: "memory",
        detail: expect.stringContaining("64 MiB"),
      });
      await hog.catch(() => undefined);
    } finally {
      await worker.stop().catch(() => {});
      await fork.release();
    }
  });

  it("runs the real Cline core as the container's PID 1, reaching the policy only through the gateway socket", async () => {
    const socketPath = join(tmp.path, "gateway.sock");
    const policy = await startScriptedPolicy(
      [
        say(
          xmlTool.executeCommand(
            'echo pwd=$(pwd); cat /etc/shadow 2>&1; node -e \'require("net").connect(80,"192.0.2.1").on("error",e=>console.log("outside:",e.code))\'',
          ),
        ),
        say(xmlTool.writeToFile("from-podman.txt", "hello")),
        say(xmlTool.attemptCompletion("done")),
      ],
      { socketPath },
    );
    const { worker, fork } = await start(
      "agent",
      { memoryMb: 2048, pids: 512, wallClockMs: 240_000 },
      { socketPath },
    );
    try {
      expect(worker.agentAddress).toMatch(/^unix:.*core\.sock$/);
      const client = createClineClient({ address: worker.agentAddress! });
      try {
        const run = await runClineTask({
          client,
          prompt: "Check the environment, then create from-podman.txt.",
          provider: { kind: "openai", baseUrl: worker.policyBaseUrl!, modelId: "flakegym-scripted" },
          limits: { idleMs: 90_000 },
        });
        expect(run.outcome.kind).toBe("completed");
      } finally {
        client.close();
      }
      const seen = JSON.stringify(policy.requests[1]!.body);
      expect(seen).toContain("pwd=/workspace");
      expect(seen).toContain("/etc/shadow: No such file");
      expect(seen).toContain("outside: ENETUNREACH");
      expect(existsSync(join(fork.tree, "workspace", "from-podman.txt"))).toBe(true);
      expect((await worker.exec("cat from-podman.txt")).stdout).toBe("hello");
    } finally {
      await worker.stop();
      await policy.close();
      await fork.release();
    }
    const ps = await execa("podman", ["ps", "-a", "--format", "{{.Names}}"], {
      env: { CONTAINERS_CONF: conf() },
    });
    expect(ps.stdout.split("\n")).not.toContain(worker.id);
  });
});
