import type { CliContext, Command } from "./command.js";
import { commands } from "./commands/index.js";
import { runCli } from "./run-cli.js";

export { STOP_GRACE_MS } from "./run-cli.js";

/** Runs the CLI and returns the exit status (0 ok, 1 failure, 2 usage error, 130 interrupted). */
export function main(argv: readonly string[], ctx?: CliContext): Promise<number> {
  return runCli(commands as readonly Command[], argv, ctx);
}
