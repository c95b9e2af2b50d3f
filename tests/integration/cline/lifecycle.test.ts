/**
 * Process lifecycle and isolation of real cores: concurrency without cross-talk, stop while busy,
 * a killed caller, secrets hygiene, and the supervisor inside a network-less bubblewrap sandbox.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ClineVendorError, launchClineCore, runClineTask } from "@flakegym/cline-vendor";
import {
  findProcesses,
  makeTempDir,
  processReaper,
  say,
  scriptedProvider,
  startScriptedPolicy,
  waitFor,
  writeThenComplete,
  xmlTool,
} from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/launch-core.ts", import.meta.url));

async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(join(entry.parentPath, entry.name));
  }
  return out;
}

async function filesContaining(root: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const file of await filesUnder(root)) {
    if ((await stat(file)).size > 200 * 1024 * 1024) continue;
    if ((await readFile(file)).includes(needle)) hits.push(relative(root, file));
  }
  return hits.sort();
}

async function dirs(root: string) {
  const d = { workspace: join(root, "ws"), configDir: join(root, "config"), home: join(root, "home") };
  await mkdir(d.workspace, { recursive: true });
  return d;
}

describe("core lifecycle (real processes)", () => {
  it("runs two sessions at once in separate dirs without cross-talk", async () => {
    await using tmp = await makeTempDir("flakegym-cline-two-");
    const [da, db] = await Promise.all([dirs(join(tmp.path, "a")), dirs(join(tmp.path, "b"))]);
    const [pa, pb] = await Promise.all([
      startScriptedPolicy(writeThenComplete("only-a.txt", "A")),
      startScriptedPolicy(writeThenComplete("only-b.txt", "B")),
    ]);
    const [ca, cb] = await Promise.all([
      launchClineCore({ ...da, startTimeoutMs: 120_000 }),
      launchClineCore({ ...db, startTimeoutMs: 120_000 }),
    ]);
    try {
      expect(ca.address).not.toBe(cb.address);
      const [ra, rb] = await Promise.all([
        runClineTask({
          client: ca.client,
          prompt: "task A",
          provider: scriptedProvider(pa),
          limits: { idleMs: 60_000 },
        }),
        runClineTask({
          client: cb.client,
          prompt: "task B",
          provider: scriptedProvider(pb),
          limits: { idleMs: 60_000 },
        }),
      ]);
      expect([ra.outcome.kind, rb.outcome.kind]).toEqual(["completed", "completed"]);
      expect(await readdir(da.workspace)).toEqual(["only-a.txt"]);
      expect(await readdir(db.workspace)).toEqual(["only-b.txt"]);
      expect(pa.requests).toHaveLength(2);
      expect(pb.requests).toHaveLength(2);
      expect(JSON.stringify(pa.requests[0]!.body)).toContain("task A");
      expect(JSON.stringify(pb.requests[0]!.body)).toContain("task B");
      expect(await readdir(join(da.configDir, "data", "tasks"))).toEqual([ra.taskId]);
      expect(await readdir(join(db.configDir, "data", "tasks"))).toEqual([rb.taskId]);
    } finally {
      await Promise.all([ca.stop(), cb.stop(), pa.close(), pb.close()]);
    }
  });

  it("stop() while a task runs a command leaves no process behind", async () => {
    await using tmp = await makeTempDir("flakegym-cline-stop-");
    const d = await dirs(tmp.path);
    const p = await startScriptedPolicy([
      say(xmlTool.executeCommand("sleep 31.4159")),
      say(xmlTool.attemptCompletion("x")),
    ]);
    const core = await launchClineCore({ ...d, startTimeoutMs: 90_000 });
    try {
      const run = runClineTask({ client: core.client, prompt: "sleep", provider: scriptedProvider(p) });
      expect(await waitFor(async () => (await findProcesses("sleep 31.4159")).length > 0, 30_000)).toBe(true);
      expect((await findProcesses(tmp.path)).length).toBeGreaterThanOrEqual(3); // supervisor, host, core
      await core.stop();
      const outcome = (await run).outcome;
      expect(outcome.kind).toBe("infra_error");
      expect(await findProcesses("sleep 31.4159")).toEqual([]);
      expect(await findProcesses(tmp.path)).toEqual([]);
      expect((await core.exited).code).not.toBeNull();
    } finally {
      await core.stop();
      await p.close();
    }
  });

  it("a SIGKILLed caller leaves no orphan: the supervisor sees its stdin close and stops both", async () => {
    await using tmp = await makeTempDir("flakegym-cline-orphan-");
    const reaper = processReaper();
    const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, tmp.path], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    reaper.track(child.pid);
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once("line", resolve);
        child.once("exit", (code) => reject(new Error(`fixture exited early with ${code}`)));
      });
      const info = JSON.parse(line) as {
        pid: number;
        childPids: { supervisor: number; host: number; core: number };
      };
      reaper.track(info.pid);
      const pids = [info.childPids.supervisor, info.childPids.host, info.childPids.core];
      expect((await findProcesses(tmp.path)).map((p) => p.pid).sort()).toEqual(expect.arrayContaining(pids));
      child.kill("SIGKILL");
      const gone = await waitFor(async () => (await findProcesses(tmp.path)).length === 0, 8_000);
      expect(gone, JSON.stringify(await findProcesses(tmp.path))).toBe(true);
    } finally {
      reaper.killAll();
    }
  });

  it("the runner's secrets never reach the core: clean env, per-trajectory token only in data/secrets.json", async () => {
    await using tmp = await makeTempDir("flakegym-cline-secrets-");
    const d = await dirs(tmp.path);
    const runnerSecret = `sk-runner-${crypto.randomUUID()}`;
    const saved = { openai: process.env.OPENAI_API_KEY, anthropic: process.env.ANTHROPIC_API_KEY };
    process.env.OPENAI_API_KEY = runnerSecret;
    process.env.ANTHROPIC_API_KEY = runnerSecret;
    process.env.FLAKEGYM_RUNNER_SECRET = runnerSecret;
    const p = await startScriptedPolicy([
      say(xmlTool.executeCommand("env > env-dump.txt")),
      ...writeThenComplete("done.txt", "ok"),
    ]);
    try {
      await expect(launchClineCore({ ...d, env: { OPENAI_API_KEY: runnerSecret } })).rejects.toMatchObject({
        code: "E_CLINE_ARGUMENT",
      });
      const core = await launchClineCore({ ...d, env: { FLAKEGYM_TASK: "secrets" }, startTimeoutMs: 90_000 });
      try {
        const run = await runClineTask({
          client: core.client,
          prompt: "dump env",
          provider: scriptedProvider(p),
          limits: { idleMs: 60_000 },
        });
        expect(run.outcome.kind).toBe("completed");
      } finally {
        await core.stop();
      }
      const token = String(p.requests[0]!.headers.authorization).replace(/^Bearer /, "");
      expect(token).toMatch(/^fgt-/);
      const envDump = await readFile(join(d.workspace, "env-dump.txt"), "utf8");
      expect(envDump).toContain(`HOME=${d.home}`);
      expect(envDump).toContain("FLAKEGYM_TASK=secrets");
      expect(await filesContaining(tmp.path, runnerSecret)).toEqual([]);
      expect(await filesContaining(tmp.path, token)).toEqual(["config/data/secrets.json"]);
      expect(await readFile(join(d.configDir, "core.log"), "utf8")).toContain("Environment variables");
    } finally {
      process.env.OPENAI_API_KEY = saved.openai;
      process.env.ANTHROPIC_API_KEY = saved.anthropic;
      if (saved.openai === undefined) delete process.env.OPENAI_API_KEY;
      if (saved.anthropic === undefined) delete process.env.ANTHROPIC_API_KEY;
      delete process.env.FLAKEGYM_RUNNER_SECRET;
      await p.close();
    }
  });

  it("refuses a credential-like variable in the core's env with a stable code", async () => {
    await using tmp = await makeTempDir("flakegym-cline-env-");
    const d = await dirs(tmp.path);
    const err = await launchClineCore({ ...d, env: { ANTHROPIC_API_KEY: "x" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClineVendorError);
    expect((err as ClineVendorError).message).toContain("ANTHROPIC_API_KEY");
    expect((err as ClineVendorError).hint).toContain("gateway");
  });
});

const bwrapMissing = spawnSync("bwrap", ["--version"]).status !== 0;
if (bwrapMissing) console.warn("skipping the bubblewrap sandbox test: `bwrap` is not installed");

describe.skipIf(bwrapMissing)("supervisor inside a network-less bubblewrap sandbox", () => {
  it("serves gRPC on a unix socket and reaches the policy through --forward to its unix socket", async () => {
    await using tmp = await makeTempDir("flakegym-cline-bwrap-");
    const d = await dirs(tmp.path);
    const policySock = join(tmp.path, "policy.sock");
    const p = await startScriptedPolicy(writeThenComplete("sandboxed.txt", "inside"), {
      socketPath: policySock,
    });
    const core = await launchClineCore({
      ...d,
      startTimeoutMs: 90_000,
      listen: { kind: "unix", path: join(tmp.path, "core.sock") },
      supervisorArgs: ["--forward", `127.0.0.1:18080=unix:${policySock}`],
      wrap: (cmd) => ({
        command: "bwrap",
        args: [
          "--dev-bind",
          "/",
          "/",
          "--proc",
          "/proc",
          "--unshare-net",
          "--unshare-pid",
          "--die-with-parent",
          "--",
          cmd.command,
          ...cmd.args,
        ],
        env: cmd.env,
      }),
    });
    try {
      expect(core.address).toBe(`unix:${join(tmp.path, "core.sock")}`);
      const run = await runClineTask({
        client: core.client,
        prompt: "Create sandboxed.txt.",
        // 127.0.0.1:18080 exists only inside the sandbox's network namespace
        provider: { kind: "openai", baseUrl: "http://127.0.0.1:18080/v1", modelId: "flakegym-scripted" },
        limits: { idleMs: 60_000 },
      });
      expect(run.outcome.kind).toBe("completed");
      expect(await readFile(join(d.workspace, "sandboxed.txt"), "utf8")).toBe("inside");
      expect(p.requests).toHaveLength(2);
    } finally {
      await core.stop();
      await p.close();
    }
    expect(await waitFor(async () => (await findProcesses(tmp.path)).length === 0, 5_000)).toBe(true);
  });
});
