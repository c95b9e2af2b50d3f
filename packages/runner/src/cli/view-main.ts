import type { CliContext, Command } from "./command.js";
import { viewCommand } from "./commands/view.js";
import { runCli } from "./run-cli.js";

/**
 * `flakegym view …` alone: the same CLI with only the view command loaded, so the viewer's
 * process starts without the rollout stack's modules (about half the start-up time here).
 */
export function main(argv: readonly string[], ctx?: CliContext): Promise<number> {
  return runCli([viewCommand as unknown as Command], argv, ctx);
}
