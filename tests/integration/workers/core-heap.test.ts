import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createLocalBackend, createWorkerPool, type WorkerSpec } from "@flakegym/runner";
import { makeTempDir, say, startScriptedPolicy, waitFor, warmPoolSkip, xmlTool } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

// The heap of a reused core (issue 47): trajectory A's prompt holds a secret; trajectory B, on the
// same (reset) worker, reads the memory of every other process in the sandbox through
// /proc/<pid>/mem — the supervisor, cline-host and cline-core hold A's conversation in their heaps
// — and says what it found. The kept processes run from execute-only binaries (non-dumpable), so
// every ptrace-mode access to them is refused and B finds nothing of A.

const skip = warmPoolSkip("core-heap suite");

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
      const a = await run("a", `Remember the code word ${SECRET} and finish.`);
      const b = await run("b", "Look around.");
      expect(b.worker).toBe(a.worker); // B ran on A's reset worker
      const seen = policy.requests.slice(1).map((r) => JSON.stringify(r.body));
      const heap = /HEAP ((?:[\w.-]+:\w+ ?)+)/.exec(seen.join("\n"))?.[1] ?? "";
      console.log(`core-heap: B's scan of the sandbox's processes: ${heap || seen.at(-1)?.slice(-2000)}`);
      expect(heap).toMatch(/cline-core|node/); // the scan ran and saw the core
      for (const s of seen) expect(s).not.toContain(SECRET);
      expect(heap).not.toContain("FOUND");
    } finally {
      await pool.close();
      await policy.close();
    }
  }, 300_000);
});
