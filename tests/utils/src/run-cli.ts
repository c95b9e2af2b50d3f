import { join } from "node:path";
import { execa } from "execa";
import { REPO_ROOT } from "./repo-root.js";

/** Runs the real `flakegym` bin as a user would (a separate node process). */
export async function runCli(
  args: readonly string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
) {
  const r = await execa(process.execPath, [join(REPO_ROOT, "packages/runner/bin/flakegym.js"), ...args], {
    cwd: opts.cwd ?? REPO_ROOT,
    env: opts.env,
    reject: false,
    timeout: opts.timeoutMs ?? 120_000,
    stdin: "ignore",
  });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr, timedOut: r.timedOut };
}
