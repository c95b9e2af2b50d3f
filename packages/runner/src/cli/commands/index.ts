import type { Command } from "../command.js";
import { nixFactsCommand } from "./nix-facts.js";
import { rolloutCommand } from "./rollout.js";
import { tasksListCommand } from "./tasks-list.js";
import { validateCommand } from "./validate.js";

/** Every subcommand, in the order `--help` lists them. One line per command. */
export const commands: readonly Command[] = [
  tasksListCommand as unknown as Command,
  nixFactsCommand as unknown as Command,
  rolloutCommand as unknown as Command,
  validateCommand as unknown as Command,
];
