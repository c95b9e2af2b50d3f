import type { Writable } from "node:stream";
import type { z } from "zod";

/** What a command gets besides its options: streams, environment and a signal for Ctrl-C. */
export interface CliContext {
  readonly stdout: Writable & { isTTY?: boolean };
  readonly stderr: Writable & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly signal: AbortSignal;
}

/**
 * A subcommand: its path (`["tasks", "list"]`), a one-line summary, its options as a zod object
 * (each field `.describe()`d; `--help` is generated from it) and what it does. `run` returns the
 * exit status.
 */
export interface Command<S extends z.ZodObject = z.ZodObject> {
  readonly path: readonly string[];
  readonly summary: string;
  readonly options: S;
  readonly examples?: readonly string[];
  /**
   * The option a bare (non-flag) argument fills, e.g. `tasks show <id>` → `id`. At most one; the
   * same value may also be given as its flag.
   */
  readonly positional?: string;
  /** A longer description printed by `--help` under the summary. */
  readonly details?: string;
  run(options: z.infer<S>, ctx: CliContext): Promise<number>;
}

/** Keeps the options type tied to the schema. */
export function defineCommand<S extends z.ZodObject>(command: Command<S>): Command<S> {
  return command;
}
