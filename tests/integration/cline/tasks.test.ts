/**
 * Real Cline core, real scripted policy over HTTP: one booted core runs several tasks in sequence
 * (each ends with clearTask, which is what makes the instance reusable — itself under test here).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type ClineCore, launchClineCore, runClineTask } from "@flakegym/cline-vendor";
import {
  makeTempDir,
  type ScriptedPolicy,
  say,
  scriptedProvider,
  startScriptedPolicy,
  type TempDir,
  writeThenComplete,
  xmlTool,
} from "@flakegym/test-utils";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

let dir: TempDir;
let core: ClineCore;
let workspace: string;
const policies: ScriptedPolicy[] = [];

async function policy(...args: Parameters<typeof startScriptedPolicy>) {
  const p = await startScriptedPolicy(...args);
  policies.push(p);
  return p;
}

beforeAll(async () => {
  dir = await makeTempDir("flakegym-cline-tasks-");
  workspace = join(dir.path, "ws");
  await mkdir(workspace);
  core = await launchClineCore({
    workspace,
    configDir: join(dir.path, "config"),
    home: join(dir.path, "home"),
    startTimeoutMs: 90_000,
  });
});

afterEach(async () => {
  await Promise.all(policies.splice(0).map((p) => p.close()));
});

afterAll(async () => {
  await core?.stop();
  await dir?.cleanup();
});

describe("runClineTask on a real core", () => {
  it("creates a file and completes (write_to_file, then attempt_completion)", async () => {
    const p = await policy(writeThenComplete("created.txt", "hello from flakegym", "created it"));
    const run = await runClineTask({
      client: core.client,
      prompt: "Create created.txt containing 'hello from flakegym'.",
      provider: scriptedProvider(p),
      limits: { idleMs: 30_000 },
    });
    expect(run.outcome).toEqual({
      kind: "completed",
      detail: "the agent attempted completion",
      result: "created it",
    });
    expect(await readFile(join(workspace, "created.txt"), "utf8")).toBe("hello from flakegym");
    expect(run.counts).toEqual({ modelRequests: 2, toolCalls: 1, apiFailures: 0 });
    expect(run.taskId).toMatch(/^\d+$/);
    expect(run.timings.turns).toHaveLength(2);
    expect(run.timings.turns[0]!.tokensIn).toBeGreaterThan(1000);
    expect(run.timings.firstTokenMs).toBeGreaterThanOrEqual(run.timings.turns[0]!.startMs);
    // Cline calls chat completions with streaming and usage, our per-trajectory token as the key.
    expect(p.requests).toHaveLength(2);
    const body = p.requests[0]!.body as { stream: boolean; stream_options: unknown; model: string };
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.model).toBe("flakegym-scripted");
    expect(p.requests[0]!.headers.authorization).toMatch(/^Bearer fgt-/);
    // the task's artifacts are on disk
    const taskDir = join(core.configDir, "data", "tasks", run.taskId);
    const ui = JSON.parse(await readFile(join(taskDir, "ui_messages.json"), "utf8")) as { ask?: string }[];
    expect(ui.some((m) => m.ask === "completion_result")).toBe(true);
  });

  it("edits a file with replace_in_file", async () => {
    await writeFile(join(workspace, "edit-me.py"), "def greet():\n    return 'hello'\n");
    const p = await policy([
      say(xmlTool.replaceInFile("edit-me.py", "    return 'hello'", "    return 'hello, world'")),
      say(xmlTool.attemptCompletion("edited")),
    ]);
    const run = await runClineTask({
      client: core.client,
      prompt: "Make greet() return 'hello, world'.",
      provider: scriptedProvider(p),
      limits: { idleMs: 30_000 },
    });
    expect(run.outcome.kind).toBe("completed");
    expect(await readFile(join(workspace, "edit-me.py"), "utf8")).toBe(
      "def greet():\n    return 'hello, world'\n",
    );
    expect(run.counts.toolCalls).toBe(1);
  });

  it("runs a command and feeds its output back to the policy", async () => {
    const p = await policy([
      say(xmlTool.executeCommand("echo flakegym-$((6*7)) > cmd-out.txt && cat cmd-out.txt")),
      say(xmlTool.attemptCompletion("ran it")),
    ]);
    const run = await runClineTask({
      client: core.client,
      prompt: "Run the command.",
      provider: scriptedProvider(p),
      limits: { idleMs: 30_000 },
    });
    expect(run.outcome.kind).toBe("completed");
    expect((await readFile(join(workspace, "cmd-out.txt"), "utf8")).trim()).toBe("flakegym-42");
    // the second request carries the command's output as the tool result
    expect(JSON.stringify(p.requests[1]!.body)).toContain("flakegym-42");
  });
});
