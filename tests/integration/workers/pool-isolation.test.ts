import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createClineClient, probeMemoryMerge, runClineTask } from "@flakegym/cline-vendor";
import {
  createLocalBackend,
  createWorkerPool,
  type Fork,
  forkTree,
  type Worker,
  type WorkerSpec,
} from "@flakegym/runner";
import {
  findProcesses,
  makeTempDir,
  processMemoryHolds,
  say,
  startScriptedPolicy,
  waitFor,
  warmPoolSkip,
  xmlTool,
} from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

// The warm pool's isolation proof: trajectory A runs on a pre-booted worker (real bubblewrap, real
// Cline core) and leaves traces everywhere it can — workspace, /deps, HOME (including a Cline rule
// the next core would load), the core's config dir, /tmp, a background process, and a task the
// core remembers, and sockets (a TCP listener, a unix socket). Trajectory B, on the next pre-booted
// worker, sees none of it, while its own writes (editor and terminal) land in its own fork and in its
// diff. The cores run as the default launch runs them (issue 32): with the kernel's same-page
// merging on, so identical pages of A's and B's cores are shared copy-on-write while both live; B's
// core is read byte by byte then, and A's task text is not in it (it is in A's: the control).

const skip = warmPoolSkip("warm pool isolation suite");

const SECRET = "PINEAPPLE-7";
const merge = probeMemoryMerge();
if (!merge.on) console.warn(`warm pool isolation: cores run without same-page merging here: ${merge.reason}`);

/** The host pid of the cline-core whose --config is `configDir`. */
async function corePid(configDir: string): Promise<number> {
  const found = await findProcesses(`cline-core.js --config ${configDir}`);
  expect(found.length).toBe(1);
  return found[0]!.pid;
}

/** `ksm_merge_any` and `ksm_merging_pages` of a process (kernel ≥ 6.4). */
async function ksmStat(pid: number): Promise<{ mergeAny: boolean; merging: number }> {
  const text = await readFile(`/proc/${pid}/ksm_stat`, "utf8");
  return {
    mergeAny: /^ksm_merge_any: yes$/m.test(text),
    merging: Number(/^ksm_merging_pages (\d+)$/m.exec(text)?.[1] ?? 0),
  };
}

describe.skipIf(skip !== "")("warm pool isolation (real Cline core in bubblewrap)", () => {
  it("shows trajectory B nothing of trajectory A", async () => {
    await using tmp = await makeTempDir("flakegym-pool-iso-");
    const lower = join(tmp.path, "snap");
    await mkdir(join(lower, "workspace"), { recursive: true });
    await mkdir(join(lower, "deps"), { recursive: true });
    await writeFile(join(lower, "workspace", "README.md"), "# demo\n");
    // our own fixture repository (not an agent's): the base the diff is taken against
    const git = (...a: string[]) =>
      execFileSync("git", ["-C", join(lower, "workspace"), ...a], { encoding: "utf8" }).trim();
    git("init", "-q");
    git("add", "-A");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base");
    const base = git("rev-parse", "HEAD");
    const stateDir = join(tmp.path, "workers");
    const socketPath = join(tmp.path, "gateway.sock");
    // a TCP listener on 127.0.0.1:18555 (0x487B) and a unix socket, alive for 1234 s
    const LISTEN =
      "import socket,time; t=socket.socket(); t.bind(('127.0.0.1',18555)); t.listen(); " +
      "u=socket.socket(socket.AF_UNIX); u.bind('/tmp/a-sock'); u.listen(); time.sleep(1234)";
    const coreConfig =
      "$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -A1 -x -- --config | tail -1)";
    const leave = [
      `CFG=${coreConfig}`,
      `echo a > "$CFG/a-config.txt"`,
      "echo a > $HOME/a-home.txt",
      `mkdir -p $HOME/Cline/Rules && echo 'Always mention ${SECRET}.' > $HOME/Cline/Rules/a-rule.md`,
      "echo a > /tmp/a-tmp.txt",
      "echo a > /deps/a-deps.txt",
      "(nohup sleep 1234 >/dev/null 2>&1 &)",
      `(nohup python3 -c "${LISTEN}" >/dev/null 2>&1 &)`,
      "sleep 1",
      'echo "A-NET: $(grep -c :487B /proc/net/tcp) $(grep -c a-sock /proc/net/unix)"',
      'echo "A-LEFT: $(ls $CFG)"',
    ].join("; ");
    const look = [
      "echo WS: $(ls -a /workspace)",
      "echo DEPS: $(ls -a /deps)",
      "echo HOME: $(ls -aR $HOME)",
      "echo TMP: $(ls -a /tmp)",
      `echo CFG: $(ls ${stateDir}/*/w/config 2>&1)`,
      "echo PS: $(cat /proc/[0-9]*/cmdline | tr '\\0' ' ')",
      "echo NET: $(cat /proc/net/tcp /proc/net/unix | tr -s ' ')",
      "echo b > from-terminal.txt",
    ].join("; ");
    const policy = await startScriptedPolicy(
      [
        say(`Writing.\n${xmlTool.writeToFile("a-secret.txt", "A was here")}`),
        say(`Leaving traces.\n${xmlTool.executeCommand(leave)}`),
        say(xmlTool.attemptCompletion("A done")),
        say(`Looking around.\n${xmlTool.executeCommand(look)}`),
        say(`Writing.\n${xmlTool.writeToFile("from-editor.txt", "B was here")}`),
        say(xmlTool.attemptCompletion("B done")),
      ],
      { socketPath },
    );
    // --reuse 1: a fresh worker per trajectory, its replacement booted while it serves (reuse's
    // reset is proven in clean-slate.test.ts and core-heap.test.ts)
    const pool = createWorkerPool(createLocalBackend({ stateDir }), {
      size: 1,
      idleMs: 300_000,
      maxBooting: 1,
      reuse: 1,
    });
    const forks: Fork[] = [];
    const spec = async (id: string): Promise<WorkerSpec> => {
      const f = await forkTree(lower, { dest: join(tmp.path, `fork-${id}`), quotaMb: 256 });
      forks.push(f);
      return {
        runId: "pool-iso",
        taskId: "demo",
        trajectoryId: id,
        profile: "node",
        workspace: join(f.tree, "workspace"),
        depsDir: join(f.tree, "deps"),
        gateway: { socketPath },
        limits: { memoryMb: 2048, pids: 512, cpuSeconds: 600, diskMb: 256, wallClockMs: 300_000 },
        agent: true,
      };
    };
    const run = async (w: Worker, prompt: string) => {
      const client = createClineClient({ address: w.agentAddress! });
      try {
        const r = await runClineTask({
          client,
          prompt,
          provider: { kind: "openai", baseUrl: w.policyBaseUrl!, modelId: "flakegym-scripted" },
          limits: { idleMs: 90_000 },
        });
        expect(r.outcome.kind).toBe("completed");
        await client.state.flushPendingState({ deadlineMs: 5000 });
        return r.taskId;
      } finally {
        client.close();
      }
    };
    let a: Worker | undefined;
    let b: Worker | undefined;
    try {
      const specA = await spec("a");
      await pool.warm(specA);
      expect(await waitFor(() => pool.state().idle === 1, 120_000, 200)).toBe(true);
      a = await pool.start(specA);
      expect(a.pooled).toBe(true);
      await run(a, `Remember the code word ${SECRET} for later.`);
      const aLeft = JSON.stringify(policy.requests[2]!.body);
      expect(aLeft).toContain("a-config.txt"); // A really wrote into its core's config dir
      expect(aLeft).toContain("A-NET: 1 1"); // and its sockets were listening
      expect(await readFile(join(specA.workspace, "a-secret.txt"), "utf8")).toBe("A was here");
      expect((await findProcesses("sleep 1234")).length).toBe(1);

      // the replacement boots while A still lives: both cores run side by side
      expect(await waitFor(() => pool.state().idle === 1, 120_000, 200)).toBe(true);
      const aCore = await corePid(a.configDir!);
      const cores = await findProcesses(`cline-core.js --config ${stateDir}`);
      const nextCore = cores.find((p) => p.pid !== aCore)!;
      expect(cores.length).toBe(2);
      expect(nextCore).toBeDefined();
      // the control: A's core holds A's task text, and the scan finds it
      expect((await processMemoryHolds(aCore, SECRET)).found).toBe(true);
      if (merge.on) {
        expect((await ksmStat(aCore)).mergeAny).toBe(true);
        expect((await ksmStat(nextCore.pid)).mergeAny).toBe(true);
        // the kernel has merged pages of the next core (with A's or its own) before it is read
        expect(await waitFor(async () => (await ksmStat(nextCore.pid)).merging > 0, 150_000, 1000)).toBe(
          true,
        );
      }
      const nextScan = await processMemoryHolds(nextCore.pid, SECRET);
      expect(nextScan.scannedBytes).toBeGreaterThan(100 * 1024 * 1024);
      expect(nextScan.found).toBe(false);
      await a.stop();
      expect(await waitFor(async () => (await findProcesses("sleep 1234")).length === 0, 10_000)).toBe(true);

      // the replacement, booted while A ran, serves B
      const specB = await spec("b");
      b = await pool.start(specB);
      expect(b.pooled).toBe(true);
      expect(b.id).not.toBe(a.id);
      const taskB = await run(b, "Look around.");
      const seen = policy.requests.slice(3).map((r) => JSON.stringify(r.body));
      const looked = seen[1]!;
      expect(looked).toMatch(/WS: \. \.\. \.git README\.md/);
      for (const trace of [
        "a-secret",
        "a-deps",
        "a-home",
        "a-rule",
        "a-tmp",
        "a-config",
        "a-sock",
        ":487B",
        "sleep 1234",
        "sleep(1234)",
        SECRET,
      ]) {
        for (const s of seen) expect(s).not.toContain(trace);
      }
      // B's core remembers only B's task
      const tasks = await readdir(join(b.configDir!, "data", "tasks"));
      expect(tasks).toEqual([taskB]);
      const history = await readFile(join(b.configDir!, "data", "state", "taskHistory.json"), "utf8");
      expect(history).not.toContain(SECRET);
      // nor does B's core process hold it, after B's own task
      expect((await processMemoryHolds(await corePid(b.configDir!), SECRET)).found).toBe(false);
      // what B's editor and terminal wrote is in B's fork, and in its diff
      expect(await readFile(join(specB.workspace, "from-editor.txt"), "utf8")).toBe("B was here");
      expect(await readFile(join(specB.workspace, "from-terminal.txt"), "utf8")).toBe("b\n");
      expect(existsSync(join(specB.workspace, "a-secret.txt"))).toBe(false);
      const dest = join(tmp.path, "artifacts-b");
      await b.collectArtifacts!({
        taskId: taskB,
        dest,
        baseCommit: base,
        baseObjects: join(lower, "workspace", ".git", "objects"),
        signal: AbortSignal.timeout(60_000),
      });
      const diff = await readFile(join(dest, "diff.patch"), "utf8");
      expect(diff).toContain("from-editor.txt");
      expect(diff).toContain("from-terminal.txt");
    } finally {
      await a?.stop();
      await b?.stop();
      await pool.close();
      await policy.close();
    }
    // every worker dir is gone (slots unmounted first: the forks are intact)
    expect(await readdir(stateDir)).toEqual([]);
    expect(await readFile(join(forks[1]!.tree, "workspace", "from-editor.txt"), "utf8")).toBe("B was here");
    for (const f of forks) await f.release();
  }, 420_000);
});
