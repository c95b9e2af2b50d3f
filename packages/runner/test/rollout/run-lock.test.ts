import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { acquireRunLock, RUN_LOCK_FILE, RunDirLockedError } from "../../src/rollout/run-lock.js";

/** A real second process holding the lock of `dir` (it prints "held" once it does, then waits). */
async function holderProcess(dir: string): Promise<ChildProcess> {
  const script = join(dir, "..", "hold.mts");
  const lib = new URL("../../src/rollout/run-lock.ts", import.meta.url).pathname;
  await writeFile(
    script,
    `import { acquireRunLock } from ${JSON.stringify(lib)};\n` +
      `await acquireRunLock(${JSON.stringify(dir)}, "rollout");\nconsole.log("held");\nsetInterval(() => {}, 1000);\n`,
  );
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const said = await Promise.race([
    once(child.stdout!, "data").then(([c]) => String(c)),
    once(child, "exit").then(([code]) => `exited ${code}`),
  ]);
  expect(said).toContain("held");
  return child;
}

const made: string[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  for (const d of made.splice(0)) await rm(d, { recursive: true, force: true });
});
async function tempRun(): Promise<string> {
  const base = await mkdtemp(join(tmpdir(), "fg-lock-"));
  made.push(base);
  return join(base, "run");
}

describe("acquireRunLock", () => {
  it("one holder at a time: a live holder in another process refuses, naming its pid", async () => {
    const dir = await tempRun();
    const child = await holderProcess(dir);
    children.push(child);
    const err = await acquireRunLock(dir, "rollout").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunDirLockedError);
    expect((err as RunDirLockedError).code).toBe("E_RUN_LOCKED");
    expect((err as Error).message).toContain(`pid ${child.pid} on `);
    expect((err as Error).message).toMatch(/started \d{4}-/);
  }, 30_000);

  it("a holder killed with -9 leaves a lock that is taken over", async () => {
    const dir = await tempRun();
    const child = await holderProcess(dir);
    child.kill("SIGKILL");
    await once(child, "exit");
    const lock = await acquireRunLock(dir, "serve");
    const rec = JSON.parse(await readFile(join(dir, RUN_LOCK_FILE), "utf8"));
    expect(rec).toMatchObject({ pid: process.pid, command: "serve" });
    await lock.release();
    expect(await readdir(dir)).toEqual([]);
  }, 30_000);

  it("released, the lock and the directory it made are gone; a second take in this process is refused", async () => {
    const dir = await tempRun();
    const lock = await acquireRunLock(dir, "rollout");
    await expect(acquireRunLock(dir, "rollout")).rejects.toBeInstanceOf(RunDirLockedError);
    await lock.release();
    await expect(readdir(dir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("an unreadable lock file is never broken", async () => {
    const dir = await tempRun();
    const lock = await acquireRunLock(dir, "rollout");
    await writeFile(join(dir, RUN_LOCK_FILE), "garbage");
    const err = await acquireRunLock(dir, "rollout").catch((e: unknown) => e);
    expect((err as RunDirLockedError).hint).toMatch(/remove .*run\.lock/);
    await lock.release(); // not ours any more: left alone
    expect(await readFile(join(dir, RUN_LOCK_FILE), "utf8")).toBe("garbage");
  });

  it("a live holder's refusal says how its own command continues (eval --resume for an eval), never to remove the lock", async () => {
    const dir = await tempRun();
    for (const [cmd, next] of [
      ["eval", `flakegym eval --resume ${dir}`],
      ["rollout", `flakegym rollout --resume ${dir}`],
      ["serve", "POST the group again"],
      ["env", "make the call again"],
    ] as const) {
      const lock = await acquireRunLock(dir, cmd);
      const err = await acquireRunLock(dir, "eval").catch((e: unknown) => e);
      expect((err as RunDirLockedError).hint).toContain(next);
      expect((err as RunDirLockedError).hint).toContain(`kill ${process.pid}`);
      expect((err as RunDirLockedError).hint).not.toMatch(/remove/);
      await lock.release();
    }
  });
});
