import { type ChildProcess, spawn } from "node:child_process";
import { openSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CORE_GC_NODE_ARGS } from "@flakegym/cline-vendor";
import { afterEach, describe, expect, it } from "vitest";
import { collectCoreGarbage, corePidAmong, isCoreArgv } from "../../../src/workers/local/core-collect.js";

describe("isCoreArgv", () => {
  it("is the core's own node (its script the bundle), not the supervisor nor a wrapper naming it", () => {
    const core = "/c/one-byte/cline-core.js";
    expect(isCoreArgv(["/sealed/node", ...CORE_GC_NODE_ARGS, core, "--config", "/cfg"])).toBe(true);
    expect(isCoreArgv(["/sealed/node", core])).toBe(true);
    expect(
      isCoreArgv(["/sealed/node", "/v/cline-supervisor.mjs", "--core-js", core, "--config", "/cfg"]),
    ).toBe(false);
    expect(
      isCoreArgv(["bwrap", "--bind", "/a", "/a", "--", "node", "/v/cline-supervisor.mjs", "--core-js", core]),
    ).toBe(false);
    expect(isCoreArgv(["prlimit", "--core-js", core])).toBe(false);
    expect(isCoreArgv([core])).toBe(false);
    expect(isCoreArgv(["/sealed/node", "/x/not-cline-core.jsx"])).toBe(false);
  });
});

describe("collectCoreGarbage (real processes)", () => {
  const started: ChildProcess[] = [];
  let dir = "";
  afterEach(async () => {
    for (const c of started.splice(0)) c.kill("SIGKILL");
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A stand-in core: node running an idle `cline-core.js`, its stderr appended to `log`. */
  async function fakeCore(nodeArgs: readonly string[]) {
    dir = await mkdtemp(join(tmpdir(), "flakegym-core-gc-"));
    const script = join(dir, "cline-core.js");
    await writeFile(script, "setInterval(() => {}, 1000); process.stdout.write('ready\\n');\n");
    const log = join(dir, "core.log");
    const fd = openSync(log, "a");
    const child = spawn(process.execPath, [...nodeArgs, script, "--config", dir], {
      stdio: ["ignore", "pipe", fd],
    });
    started.push(child);
    await new Promise((r) => child.stdout!.once("data", r));
    return { pid: child.pid!, log, child };
  }

  it("finds the core among kept pids, and its collection's marker appears in the log", async () => {
    const core = await fakeCore(CORE_GC_NODE_ARGS);
    expect(await corePidAmong([process.pid, core.pid])).toBe(core.pid);
    const r = await collectCoreGarbage(core.pid, core.log, { ms: 15_000 });
    expect(r).toMatchObject({ done: true, marker: { seq: 1 } });
    expect(await readFile(core.log, "utf8")).toMatch(/^flakegym-core-gc 1 heap-used-mib [\d.]+ cpu-ms \d+$/m);
  });

  it("a core without the preload ignores the signal: reported within the bound, the core unharmed", async () => {
    const core = await fakeCore([]);
    const t0 = Date.now();
    const r = await collectCoreGarbage(core.pid, core.log, { ms: 300 });
    expect(r.done).toBe(false);
    expect(r.done ? "" : r.why).toContain("core-gc.cjs not loaded?");
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(core.child.exitCode).toBeNull();
    expect(() => process.kill(core.pid, 0)).not.toThrow();
  });

  it("a core that is gone is reported, not thrown", async () => {
    const core = await fakeCore(CORE_GC_NODE_ARGS);
    core.child.kill("SIGKILL");
    await new Promise((r) => core.child.once("exit", r));
    const r = await collectCoreGarbage(core.pid, core.log, { ms: 300 });
    expect(r.done).toBe(false);
  });
});
