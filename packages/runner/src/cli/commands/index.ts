import type { Command } from "../command.js";
import { nomadRenderCommand } from "./nomad-render.js";
import { tasksListCommand } from "./tasks-list.js";

/** Every subcommand, in the order `--help` lists them. One line per command. */
export const commands: readonly Command[] = [
  tasksListCommand as unknown as Command,
  nomadRenderCommand as unknown as Command,
];
