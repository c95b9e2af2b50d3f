import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withCall } from "../../src/api/call.js";
import { type EnvSession, loadSession, saveSession } from "../../src/api/session.js";
import { teardown } from "../../src/api/teardown.js";
import { genericContract } from "../../src/contract/generic.js";

/**
 * Two calls on one env session at once: the session directory's one lock (the run lock) makes the
 * second a refusal naming the holder; nothing is written twice, and the call count is the truth.
 */

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-session-lock-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function newSession(id: string): Promise<EnvSession> {
  const s: EnvSession = {
    version: 1,
    id,
    createdAt: new Date(0).toISOString(),
    target: { kind: "local", path: "/r" },
    contract: genericContract("node"),
    contractSource: "generic",
    hints: [],
    dir: join(dir, id),
    workspace: join(dir, id, "workspace"),
    limits: {},
    calls: 0,
    state: "ready",
  };
  await saveSession(s);
  await writeFile(join(s.dir, "prompts.jsonl"), "");
  return s;
}

const limits = { max_total_seconds: 30, max_cmd_seconds: 10 } as never;

describe("env sessions: one writer at a time", () => {
  it("two calls at once: one runs, the other is refused (E_RUN_LOCKED naming the holder); calls counts what ran", async () => {
    const s = await newSession("s-race");
    const body = async (_run: unknown, callDir: string) => {
      await new Promise((r) => setTimeout(r, 300));
      return callDir;
    };
    const both = await Promise.allSettled([
      withCall(s, "rollout", {}, limits, body),
      withCall(s, "rollout", {}, limits, body),
    ]);
    const ok = both.filter((r) => r.status === "fulfilled");
    const refused = both.flatMap((r) =>
      r.status === "rejected" ? [r.reason as { code: string; message: string }] : [],
    );
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.code).toBe("E_RUN_LOCKED");
    expect(refused[0]!.message).toMatch(/flakegym env \(pid \d+/);
    expect((await loadSession(s.dir)).calls).toBe(1);
    // the next call (from the stale object) numbers itself from what is stored: 2, not 1 again
    const next = await withCall(s, "rollout", {}, limits, body);
    expect(next.value).toMatch(/calls\/2-rollout$/);
    expect((await loadSession(s.dir)).calls).toBe(2);
    expect((await readdir(s.dir)).filter((n) => n.includes("lock"))).toEqual([]);
  });

  it("teardown while a call holds the session is refused; after it, it removes the session", async () => {
    const s = await newSession("s-teardown");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const call = withCall(s, "rollout", {}, limits, async () => held);
    await new Promise((r) => setTimeout(r, 100));
    await expect(teardown({ session: s.dir })).rejects.toMatchObject({ code: "E_RUN_LOCKED" });
    release();
    await call;
    expect(await teardown({ session: s.dir })).toEqual({ removed: true });
  });
});

describe("env sessions: a cut session.json", () => {
  it("names the file, where it was cut and what to do (not a bare parser message)", async () => {
    const s = await newSession("cut");
    const file = join(s.dir, "session.json");
    await writeFile(file, '{"version": 1, "id": "cu');
    const err = await loadSession(s.dir).catch((e: unknown) => e as Error & { hint?: string });
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(`truncated or not JSON: ${file}`);
    expect((err as { hint?: string }).hint).toMatch(/setup again/);
  });
});
