/**
 * Policy failures that outlast Cline's own retries (≈15 s of backoff each): two cores, the two cases
 * run concurrently so the suite waits for the backoff once.
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type ClineCore, launchClineCore, runClineTask } from "@flakegym/cline-vendor";
import {
  makeTempDir,
  scriptedProvider,
  startScriptedPolicy,
  type TempDir,
  writeThenComplete,
} from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let dir: TempDir;
const cores: ClineCore[] = [];

async function boot(name: string): Promise<ClineCore> {
  const workspace = join(dir.path, name, "ws");
  await mkdir(workspace, { recursive: true });
  return await launchClineCore({
    workspace,
    configDir: join(dir.path, name, "config"),
    home: join(dir.path, name, "home"),
    startTimeoutMs: 90_000,
  });
}

beforeAll(async () => {
  dir = await makeTempDir("flakegym-cline-failures-");
  cores.push(...(await Promise.all([boot("a"), boot("b")])));
});

afterAll(async () => {
  await Promise.all(cores.map((c) => c.stop()));
  await dir?.cleanup();
});

describe.concurrent("policy failures beyond Cline's retries", () => {
  it("a malformed SSE stream → api_req_failed → our retry → completed", async () => {
    const core = cores[0]!;
    // Cline makes 4 attempts (backoff 2/4/8 s) before it asks; the 5th request succeeds.
    const p = await startScriptedPolicy(writeThenComplete("recovered.txt", "ok"), {
      faults: { 0: { kind: "malformed", times: 4 } },
    });
    try {
      const run = await runClineTask({
        client: core.client,
        prompt: "Create recovered.txt.",
        provider: scriptedProvider(p),
        limits: { idleMs: 30_000 },
        askPolicy: { maxApiRetries: 1 },
      });
      expect(run.outcome.kind).toBe("completed");
      expect(run.counts.apiFailures).toBe(1);
      expect(p.requests.map((r) => r.answer)).toEqual([
        "malformed",
        "malformed",
        "malformed",
        "malformed",
        "reply",
        "reply",
      ]);
      expect(await readFile(join(core.workspace, "recovered.txt"), "utf8")).toBe("ok");
    } finally {
      await p.close();
    }
  });

  it("HTTP 400 on every try, no retries granted → policy_error naming the error", async () => {
    const core = cores[1]!;
    const p = await startScriptedPolicy(writeThenComplete("never.txt", "x"), {
      faults: {
        0: { kind: "status", status: 400, times: 1000, body: '{"error":{"message":"bad-request-c0ffee"}}' },
      },
    });
    try {
      const run = await runClineTask({
        client: core.client,
        prompt: "Create never.txt.",
        provider: scriptedProvider(p),
        limits: { idleMs: 30_000 },
        askPolicy: { maxApiRetries: 0 },
      });
      expect(run.outcome.kind).toBe("policy_error");
      expect(run.outcome.detail).toContain("failed 1 time(s)");
      expect(run.outcome.detail).toContain("400");
      expect(run.counts.apiFailures).toBe(1);
      // the instance is clean for the next task
      expect((await core.client.state.getLatestState()).currentTaskItem ?? undefined).toBeUndefined();
    } finally {
      await p.close();
    }
  });
});
