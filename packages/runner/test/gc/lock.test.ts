import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireLock } from "../../src/gc/lock.js";

describe("acquireLock", () => {
  it("serializes holders of the same lock", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "fg-lock-")), "locks", "k");
    const events: string[] = [];
    const worker = async (name: string) => {
      const release = await acquireLock(dir, { pollMs: 5 });
      events.push(`${name}+`);
      await new Promise((r) => setTimeout(r, 30));
      events.push(`${name}-`);
      await release();
    };
    await Promise.all([worker("a"), worker("b"), worker("c")]);
    for (let i = 0; i < events.length; i += 2)
      expect(events[i]!.slice(0, 1)).toBe(events[i + 1]!.slice(0, 1));
  });

  it("breaks a stale lock whose owner process is gone", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "fg-lock-")), "k");
    await mkdir(dir);
    // pid 2^22+1 is above the default pid_max: no such process
    await writeFile(join(dir, "owner.json"), JSON.stringify({ pid: 4194305, host: hostname(), since: "x" }));
    const release = await acquireLock(dir, { timeoutMs: 2000 });
    await release();
  });

  it("times out on a live lock naming the holder and what to do", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "fg-lock-")), "k");
    const release = await acquireLock(dir);
    let waited = false;
    await expect(
      acquireLock(dir, { timeoutMs: 100, pollMs: 10, onWait: () => (waited = true) }),
    ).rejects.toThrow(new RegExp(`held by pid ${process.pid}`));
    expect(waited).toBe(true);
    await release();
  });
});
