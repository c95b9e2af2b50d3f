import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rollout, setup, teardown } from "../../src/api/index.js";
import type { EnvSession } from "../../src/api/session.js";
import { GENERIC_STAGE_FILES } from "../../src/contract/generic.js";
import { skipWithoutSandbox } from "../helpers/sandbox.js";

const skip = skipWithoutSandbox("api limits (stage scripts in real sandboxes)");

/** A repository whose rollout stage is `script`. */
async function repoWith(root: string, name: string, script: string, extra: Record<string, string> = {}) {
  const repo = join(root, name);
  await mkdir(join(repo, ".flakegym/stages"), { recursive: true });
  await writeFile(
    join(repo, "flakegym.yml"),
    "version: 1\nstages:\n  rollout: .flakegym/stages/rollout.sh\n  evaluation: .flakegym/stages/rollout.sh\nlimits:\n  max_cmd_seconds: 30\n",
  );
  await writeFile(join(repo, ".flakegym/stages/rollout.sh"), script);
  for (const [rel, text] of Object.entries(extra)) await writeFile(join(repo, rel), text);
  return repo;
}

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe.skipIf(skip)("stage limits, aborts, hostile artifacts and model faults", () => {
  let root: string;
  let sessionsDir: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "fg-api-limits-"));
    sessionsDir = join(root, "sessions");
  });
  afterAll(async () => rm(root, { recursive: true, force: true }));

  it("max_cmd_seconds and max_total_seconds (run-time overrides) end a stage as a timeout naming them", async () => {
    const s = await setup(await repoWith(root, "slow", "sleep 60\n"), { sessionsDir });
    const cmd = await rollout("empty", { session: s, sessionsDir, limits: { max_cmd_seconds: 2 } });
    expect(cmd.outcome).toMatchObject({ kind: "timeout", limit: "wall_clock" });
    expect(cmd.outcome.detail).toMatch(/max_cmd_seconds \(2 s\)/);
    expect(cmd.durationMs).toBeLessThan(30_000);
    const total = await rollout("empty", { session: s, sessionsDir, limits: { max_total_seconds: 2 } });
    expect(total.outcome).toMatchObject({ kind: "timeout", limit: "caller_deadline" });
    expect(total.outcome.detail).toMatch(/max_total_seconds/);
    await teardown({ session: s, sessionsDir });
  }, 120_000);

  it("the caller's AbortSignal ends a call", async () => {
    const s = await setup(await repoWith(root, "abort", "sleep 60\n"), { sessionsDir });
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(new Error("stopped by the caller")), 1500);
    await expect(rollout("empty", { session: s, sessionsDir, signal: ac.signal })).rejects.toThrow(
      /stopped by the caller/,
    );
    clearTimeout(t);
    await teardown({ session: s, sessionsDir });
  }, 120_000);

  it("an artifact the stage made a symlink is never read through", async () => {
    const s: EnvSession = await setup(
      await repoWith(root, "hostile", 'ln -s /etc/passwd "$FLAKEGYM_OUT/rollout.json"\n'),
      { sessionsDir },
    );
    await expect(rollout("empty", { session: s, sessionsDir })).rejects.toThrow(
      /without writing rollout\.json/,
    );
    await teardown({ session: s, sessionsDir });
  }, 120_000);

  it("a model server that is down makes the rollout a policy_error", async () => {
    const port = await closedPort();
    const s = await setup(
      await repoWith(root, "policy", GENERIC_STAGE_FILES[".flakegym/stages/rollout.sh"], {
        ".flakegym/stages/rollout.mjs": GENERIC_STAGE_FILES[".flakegym/stages/rollout.mjs"],
      }),
      { sessionsDir },
    );
    const r = await rollout(`openai:http://127.0.0.1:${port}/v1#m`, {
      session: s,
      sessionsDir,
      maxSamples: 1,
    });
    expect(r.outcome.kind).toBe("policy_error");
    await teardown({ session: s, sessionsDir });
  }, 120_000);
});

describe.skipIf(skip)("setup of a hostile local repository", () => {
  it("copies links as links and skips FIFOs instead of reading them", async () => {
    const { execFileSync } = await import("node:child_process");
    const { lstat, symlink } = await import("node:fs/promises");
    const root = await mkdtemp(join(tmpdir(), "fg-api-hostile-"));
    try {
      const repo = await repoWith(root, "fifo", "true\n");
      execFileSync("mkfifo", [join(repo, "pipe")]);
      await symlink("/etc/hostname", join(repo, "link"));
      const s = await setup(repo, { sessionsDir: join(root, "sessions") });
      expect((await lstat(join(s.workspace, "link"))).isSymbolicLink()).toBe(true);
      await expect(lstat(join(s.workspace, "pipe"))).rejects.toThrow(/ENOENT/);
      await teardown({ session: s, sessionsDir: join(root, "sessions") });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});
