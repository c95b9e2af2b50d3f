import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  createClineClient,
  probeMappedCore,
  probeOneByteCore,
  resolveClinePackage,
  runClineTask,
} from "@flakegym/cline-vendor";
import { createLocalBackend, createWorkerPool, type WorkerSpec } from "@flakegym/runner";
import { makeTempDir, say, startScriptedPolicy, waitFor, warmPoolSkip, xmlTool } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";
import { flakegymCacheRoot } from "../../../packages/runner/src/cache-root.mjs";

// The heap of a reused core (issue 47): trajectory A's prompt holds a secret; trajectory B, on the
// same (reset) worker, reads the memory of every other process in the sandbox through
// /proc/<pid>/mem — the supervisor, cline-host and cline-core hold A's conversation in their heaps
// — and says what it found. The kept processes run from execute-only binaries (non-dumpable), so
// every ptrace-mode access to them is refused and B finds nothing of A.

const skip = warmPoolSkip("core-heap suite");
const cacheRoot = flakegymCacheRoot(process.env);
const mapped = probeMappedCore(probeOneByteCore(resolveClinePackage(), cacheRoot), cacheRoot);
const mappedFile = mapped.on ? join(mapped.dir, "cline-core.latin1") : "";
const sha = async (f: string) =>
  createHash("sha256")
    .update(await readFile(f))
    .digest("hex");

// The core maps its bundle's source from a file (mapped-core.ts): the agent must not be able to change
// the text a reused core compiles its functions from. Every attempt prints its shell status.
const mappedAttack = (file: string) =>
  [
    `echo pwned >> ${file}; a=$?`,
    `: > ${file}; b=$?`,
    `chmod 666 ${file}; c=$?`,
    `mv ${file} ${file}.x; d=$?`,
    `echo "MAPPED $a $b $c $d"`,
  ].join("; ");

/** pids of the host's processes that map `file` (root reads every process's maps). */
async function mappersOf(file: string): Promise<number[]> {
  const out: number[] = [];
  for (const d of (await readdir("/proc")).filter((x) => /^\d+$/.test(x))) {
    const maps = await readFile(`/proc/${d}/maps`, "utf8").catch(() => "");
    if (maps.includes(file)) out.push(Number(d));
  }
  return out;
}

const SECRET = `HEAPSECRET${Math.random().toString(36).slice(2, 12).toUpperCase()}`;

// the scanner holds the secret reversed, so B's own conversation (in the core's heap) never holds it
const scanner = (reversed: string) => `
const fs = require("fs");
const want = Buffer.from(${JSON.stringify(reversed)}.split("").reverse().join(""));
const out = [];
for (const d of fs.readdirSync("/proc").filter((x) => /^\\d+$/.test(x))) {
  if (Number(d) === process.pid) continue;
  const comm = fs.readFileSync("/proc/" + d + "/comm", "utf8").trim();
  let maps;
  try { maps = fs.readFileSync("/proc/" + d + "/maps", "utf8"); } catch (e) { out.push(comm + ":" + e.code); continue; }
  let fd;
  try { fd = fs.openSync("/proc/" + d + "/mem", "r"); } catch (e) { out.push(comm + ":" + e.code); continue; }
  let hit = false;
  for (const line of maps.split("\\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) rw/.exec(line);
    if (!m || hit) continue;
    const lo = Number.parseInt(m[1], 16), hi = Number.parseInt(m[2], 16);
    for (let at = lo; at < hi && !hit; at += 1 << 20) {
      const buf = Buffer.alloc(Math.min(1 << 20, hi - at) + want.length);
      let n = 0;
      try { n = fs.readSync(fd, buf, 0, buf.length, at); } catch { break; }
      hit = buf.subarray(0, n).includes(want);
    }
  }
  fs.closeSync(fd);
  out.push(comm + ":" + (hit ? "FOUND" : "read"));
}
console.log("HEAP " + out.sort().join(" "));
`;

describe.skipIf(skip !== "")("a reused core's heap (real Cline core in bubblewrap)", () => {
  it("does not show the next trajectory what the previous one said", async () => {
    await using tmp = await makeTempDir("flakegym-core-heap-");
    const ws = join(tmp.path, "ws");
    await mkdir(ws, { recursive: true });
    await writeFile(join(ws, "README.md"), "# demo\n");
    const socketPath = join(tmp.path, "gateway.sock");
    const policy = await startScriptedPolicy(
      [
        say(xmlTool.attemptCompletion("A done")),
        say(`Scanning.\n${xmlTool.writeToFile("scan.js", scanner([...SECRET].reverse().join("")))}`),
        say(`Running.\n${xmlTool.executeCommand("node scan.js")}`),
        ...(mapped.on ? [say(`Writing.\n${xmlTool.executeCommand(mappedAttack(mappedFile))}`)] : []),
        say(xmlTool.attemptCompletion("B done")),
      ],
      { socketPath },
    );
    const pool = createWorkerPool(createLocalBackend({ stateDir: join(tmp.path, "w") }), {
      size: 1,
      idleMs: 300_000,
      maxBooting: 1,
      reuse: 2,
    });
    const spec = (id: string): WorkerSpec => ({
      runId: "core-heap",
      taskId: "demo",
      trajectoryId: id,
      profile: "node",
      workspace: ws,
      gateway: { socketPath },
      limits: { memoryMb: 2048, pids: 512, cpuSeconds: 600, diskMb: 256, wallClockMs: 300_000 },
      agent: true,
    });
    const run = async (id: string, prompt: string) => {
      const w = await pool.start(spec(id));
      const client = createClineClient({ address: w.agentAddress! });
      try {
        const r = await runClineTask({
          client,
          prompt,
          provider: { kind: "openai", baseUrl: w.policyBaseUrl!, modelId: "flakegym-scripted" },
          limits: { idleMs: 90_000 },
        });
        return { worker: w.id, outcome: r.outcome.kind };
      } finally {
        client.close();
        await w.release!("completed");
      }
    };
    try {
      await pool.warm(spec("warm"), 2);
      expect(await waitFor(() => pool.state().idle === 1, 180_000, 200)).toBe(true);
      const before = mapped.on ? await sha(mappedFile) : "";
      if (mapped.on)
        expect((await mappersOf(mappedFile)).length).toBeGreaterThan(0); // the core maps it
      else console.log(`core-heap: the mapped-source attack is not run: ${mapped.reason}`);
      const a = await run("a", `Remember the code word ${SECRET} and finish.`);
      const b = await run("b", "Look around.");
      expect(b.worker).toBe(a.worker); // B ran on A's reset worker
      const seen = policy.requests.slice(1).map((r) => JSON.stringify(r.body));
      const heap = /HEAP ((?:[\w.-]+:\w+ ?)+)/.exec(seen.join("\n"))?.[1] ?? "";
      console.log(`core-heap: B's scan of the sandbox's processes: ${heap || seen.at(-1)?.slice(-2000)}`);
      expect(heap).toMatch(/cline-core|node/); // the scan ran and saw the core
      for (const s of seen) expect(s).not.toContain(SECRET);
      expect(heap).not.toContain("FOUND");
      if (mapped.on) {
        const attack = /MAPPED (\d+) (\d+) (\d+) (\d+)/.exec(seen.join("\n"));
        console.log(`core-heap: B's writes to the mapped source exited ${attack?.slice(1).join(" ")}`);
        expect(attack).not.toBeNull();
        for (const rc of attack!.slice(1)) expect(rc).not.toBe("0");
        expect(await sha(mappedFile)).toBe(before);
      }
    } finally {
      await pool.close();
      await policy.close();
    }
  }, 300_000);
});
