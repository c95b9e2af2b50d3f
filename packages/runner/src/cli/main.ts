import { FLAKEGYM_VERSION } from "../version.js";
import type { CliContext, Command } from "./command.js";
import { renderMainHelp } from "./help.js";
import { runCli } from "./run-cli.js";

export { STOP_GRACE_MS } from "./run-cli.js";

/**
 * Runs the CLI and returns the exit status (0 ok, 1 failure, 2 usage error, 130 interrupted).
 * `--version` answers before the commands' modules load (in the bundle they are a chunk of their own).
 */
export async function main(argv: readonly string[], ctx?: CliContext): Promise<number> {
  if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
    (ctx?.stdout ?? process.stdout).write(`${FLAKEGYM_VERSION}\n`);
    return 0;
  }
  const { commands } = await import("./commands/index.js");
  return runCli(commands as readonly Command[], argv, ctx);
}

/** `flakegym --help`'s text: the bundle build writes it beside the bundle, so `--help` loads no command. */
export async function mainHelpText(): Promise<string> {
  const { commands } = await import("./commands/index.js");
  return renderMainHelp(commands as readonly Command[], FLAKEGYM_VERSION);
}
