import { PassThrough } from "node:stream";
import { main } from "../../src/cli/main.js";

/** Runs the CLI in this process with captured streams: its exit status, stdout and stderr. */
export async function runCliCaptured(
  argv: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = "";
  let stderr = "";
  out.on("data", (c) => (stdout += c));
  err.on("data", (c) => (stderr += c));
  const code = await main(argv, {
    stdout: out,
    stderr: err,
    env: opts.env ?? process.env,
    cwd: opts.cwd ?? process.cwd(),
    signal: new AbortController().signal,
  });
  return { code, stdout, stderr };
}
