import { createRequire } from "node:module";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { AGENT_USER_ENV, AGENT_USER_NODE_ARGS, agentUserValue } from "../src/agent-user.js";

// Every child of the core as the agent's user (supervisor/agent-user.cjs, issue 42): the pure
// rewrites of a call's options, then a real Node process with the preload, as root, whose children
// (async, sync, through a shell) all report the other user and no capabilities.

interface AgentUser {
  parseAgentUser(text: unknown): { uid: number; gid: number } | undefined;
  demoted(options: unknown, ids: { uid: number; gid: number }): Record<string, unknown>;
  demotedSyncArgs(call: unknown[], ids: { uid: number; gid: number }): unknown[];
}
const au = createRequire(import.meta.url)("../supervisor/agent-user.cjs") as AgentUser;
const ids = { uid: 65534, gid: 65534 };

describe("agent-user: the options of every child", () => {
  it.each([
    ["1000:1000", { uid: 1000, gid: 1000 }],
    ["0:5", { uid: 0, gid: 5 }],
    ["1000", undefined],
    ["a:b", undefined],
    ["1000:1000\n", undefined],
    ["-1:3", undefined],
    [undefined, undefined],
  ])("parses %j", (text, expected) => {
    expect(au.parseAgentUser(text)).toEqual(expected);
  });

  it("sets the ids over whatever the call named, keeps the rest", () => {
    expect(au.demoted({ cwd: "/w", uid: 0, gid: 0 }, ids)).toEqual({ cwd: "/w", ...ids });
    expect(au.demoted(undefined, ids)).toEqual(ids);
  });

  it.each([
    ["execSync(cmd)", ["ls"], ["ls", ids]],
    ["execSync(cmd, opts)", ["ls", { cwd: "/" }], ["ls", { cwd: "/", ...ids }]],
    ["execFileSync(file, args)", ["ls", ["-l"]], ["ls", ["-l"], ids]],
    ["execFileSync(file, args, opts)", ["ls", ["-l"], { cwd: "/" }], ["ls", ["-l"], { cwd: "/", ...ids }]],
    ["spawnSync(file, opts)", ["ls", { cwd: "/" }], ["ls", { cwd: "/", ...ids }]],
    [
      "spawnSync(file, undefined, opts)",
      ["ls", undefined, { cwd: "/" }],
      ["ls", undefined, { cwd: "/", ...ids }],
    ],
  ])("%s", (_, call, expected) => {
    expect(au.demotedSyncArgs(call, ids)).toEqual(expected);
  });

  it("names the variable and its value", () => {
    expect(AGENT_USER_ENV).toBe("FLAKEGYM_AGENT_USER");
    expect(agentUserValue(1000, 1001)).toBe("1000:1001");
    expect(AGENT_USER_NODE_ARGS[0]).toBe("--require");
  });
});

const root = process.getuid?.() === 0;
if (!root) console.log("agent-user: the real-process case needs root (to change a child's user); skipped");

describe.skipIf(!root)("agent-user: a real process with the preload", () => {
  it("every child runs as the agent's user without capabilities; the variable is gone; a bad value stops the process", async () => {
    const script = `
      const cp = require("node:child_process");
      const caps = 'grep CapEff /proc/self/status';
      const out = {
        env: process.env.FLAKEGYM_AGENT_USER ?? null,
        self: process.getuid(), egid: process.getegid(), umask: process.umask().toString(8),
        spawn: null,
        exec: cp.execSync("id -u; id -g; " + caps, { encoding: "utf8" }),
        execFile: cp.execFileSync("id", ["-u"], { encoding: "utf8" }),
        spawnSync: cp.spawnSync("id", ["-u"], { encoding: "utf8", uid: 0 }).stdout,
        childEnv: cp.execSync("echo $FLAKEGYM_AGENT_USER", { encoding: "utf8" }),
      };
      const c = cp.spawn("/bin/sh", ["-c", "id -u; " + caps], { detached: true });
      let s = ""; c.stdout.on("data", (d) => { s += d; });
      c.on("close", () => { out.spawn = s; console.log(JSON.stringify(out)); });`;
    const r = await execa(process.execPath, [...AGENT_USER_NODE_ARGS, "-e", script], {
      env: { ...process.env, [AGENT_USER_ENV]: "65534:65534" },
      reject: false,
      timeout: 30_000,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.env).toBeNull();
    expect(out.self).toBe(0);
    expect(out.egid).toBe(65534);
    expect(out.umask).toBe("2");
    expect(out.exec).toMatch(/^65534\n65534\nCapEff:\s+0+\n$/);
    expect(out.execFile.trim()).toBe("65534");
    expect(out.spawnSync.trim()).toBe("65534");
    expect(out.childEnv.trim()).toBe("");
    expect(out.spawn).toMatch(/^65534\nCapEff:\s+0+\n$/);
    const bad = await execa(process.execPath, [...AGENT_USER_NODE_ARGS, "-e", "console.log('ran')"], {
      env: { ...process.env, [AGENT_USER_ENV]: "nobody" },
      reject: false,
      timeout: 30_000,
    });
    expect(bad.exitCode).toBe(78);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toMatch(/FLAKEGYM_AGENT_USER must be <uid>:<gid>/);
  });
});
