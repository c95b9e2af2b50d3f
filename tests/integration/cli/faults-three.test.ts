import { mkdir, readdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { makeTempDir, runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

/**
 * Faults round three, the refusals that come before anything starts, with the real CLI: eval's
 * output paths answer like rollout's (exit 2, before the banner, naming the flag), a /proc
 * sessions dir answers at once, and an unreachable model server is named once. (A closed stdout
 * under a real rollout is a chaos case: tests/chaos/faults-three.test.ts.)
 */

/** Nothing of an eval or run started: no banner, no gc line. */
const startedNothing = (stderr: string) => !/^(eval|resuming eval|rollout|resuming) |^gc: /m.test(stderr);

/** A TCP port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe("eval shares rollout's output-path checks and exit codes", () => {
  it("--out /proc/x, a file, under a file, or a non-empty dir: exit 2 before the banner, naming --out, at once", async () => {
    await using dir = await makeTempDir("fg-eval-out-");
    const file = join(dir.path, "a-file");
    await writeFile(file, "x");
    const full = join(dir.path, "full");
    await mkdir(full);
    await writeFile(join(full, "report.json"), "{}");
    const cases: [string, RegExp][] = [
      ["/proc/x", /--out \/proc\/x: .*proc filesystem/],
      [file, /--out .*a-file: .* is a file/],
      [join(file, "sub"), /--out .* is under .*a-file, which is a file/],
      [full, /--out .*full is not empty[\s\S]*--resume/],
    ];
    for (const [out, message] of cases) {
      const t0 = Date.now();
      const r = await runCli(["eval", "--task", "semver-lite-caret-zero", "--policy", "gold", "--out", out], {
        timeoutMs: 60_000,
      });
      expect(r.exitCode, `--out ${out}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/EEXIST|ENOTDIR/);
      expect(startedNothing(r.stderr)).toBe(true);
      expect(Date.now() - t0).toBeLessThan(30_000);
    }
    expect(await readdir(full)).toEqual(["report.json"]);
  });

  it("eval --resume of a directory no eval wrote names eval.json and what to do (exit 1, nothing started)", async () => {
    await using dir = await makeTempDir("fg-eval-resume-");
    const r = await runCli(["eval", "--resume", dir.path], { timeoutMs: 60_000 });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(join(dir.path, "eval.json"));
    expect(r.stderr).toMatch(/--resume takes a directory an eval wrote/);
    expect(startedNothing(r.stderr)).toBe(true);
  });
});

describe("env setup --sessions-dir", () => {
  it("/proc/x answers at once with an error naming the flag (no hang)", async () => {
    const t0 = Date.now();
    const r = await runCli(["env", "setup", "semver-lite-caret-zero", "--sessions-dir", "/proc/x"], {
      timeoutMs: 60_000,
    });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--sessions-dir \/proc\/x: .*proc filesystem/);
    expect(Date.now() - t0).toBeLessThan(30_000);
  });
});

describe("the policy endpoint is probed once, before the first trajectory", () => {
  it.each(["rollout", "eval"])(
    "%s with an unreachable model server exits 2 at once, naming the URL",
    async (cmd) => {
      await using dir = await makeTempDir("fg-probe-");
      const url = `http://127.0.0.1:${await deadPort()}/v1`;
      const t0 = Date.now();
      const r = await runCli(
        [
          cmd,
          "--task",
          "semver-lite-caret-zero",
          "--policy",
          `openai:${url}#m`,
          "--out",
          join(dir.path, "out"),
        ],
        { timeoutMs: 60_000 },
      );
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toContain(`the model server ${url} cannot be reached (ECONNREFUSED)`);
      expect(startedNothing(r.stderr)).toBe(true);
      expect(Date.now() - t0).toBeLessThan(30_000);
    },
  );
});
