import { describeError, FlakegymError, UsageError } from "../errors.js";
import { FLAKEGYM_VERSION } from "../version.js";
import { surviveClosedOutput } from "./closed-output.js";
import type { CliContext, Command } from "./command.js";
import {
  commandGroups,
  groupHelpRequest,
  renderCommandHelp,
  renderGroupHelp,
  renderMainHelp,
} from "./help.js";
import { parseArgs } from "./parse-args.js";

/** Finds the longest command path that prefixes argv. */
function findCommand(
  commands: readonly Command[],
  argv: readonly string[],
): { cmd: Command; rest: string[] } | undefined {
  let best: Command | undefined;
  for (const c of commands) {
    if (c.path.every((p, i) => argv[i] === p) && (!best || c.path.length > best.path.length)) best = c;
  }
  return best ? { cmd: best, rest: argv.slice(best.path.length) } : undefined;
}

/**
 * How long a clean stop may take after the first SIGINT/SIGTERM/SIGHUP before the process exits anyway:
 * a signal always ends the run, whatever it waits on (what is left behind, the next run's gc reclaims).
 */
export const STOP_GRACE_MS = 15_000;

/** The signals that stop a command cleanly (exit 130, its record written); a second one forces. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

function defaultContext(): CliContext & { dispose(): void } {
  const ac = new AbortController();
  let interrupts = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupts++;
    if (interrupts === 1) {
      process.stderr.write(`\nflakegym: ${sig} received, stopping cleanly (press Ctrl-C again to force)\n`);
      ac.abort(new FlakegymError("E_INTERRUPTED", `interrupted by ${sig}`));
      setTimeout(() => {
        process.stderr.write(`flakegym: still stopping after ${STOP_GRACE_MS / 1000} s: exiting now\n`);
        dieBy(sig);
      }, STOP_GRACE_MS).unref();
    } else {
      dieBy(sig);
    }
  };
  /**
   * Ends the process by the signal itself (the shell sees 128+n). Not process.exit: it joins the I/O
   * threads, and one blocked for ever (an open() of a FIFO, a mkdir under /proc) would hold it.
   */
  const dieBy = (sig: NodeJS.Signals) => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
    process.kill(process.pid, sig);
    setTimeout(() => process.kill(process.pid, "SIGKILL"), 2_000).unref();
  };
  // SIGHUP too (a closed terminal, an ssh session that drops): its default would end the process
  // at once, leaving the run's lock, its workers' mounts and cgroups, and a half-finished record
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  // a closed stdout/stderr (`| head`) never ends the run: it goes on and writes its record to disk
  // (for the process's life: a write still queued when the command returns may fail after it)
  surviveClosedOutput(process.stdout);
  surviveClosedOutput(process.stderr);
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    signal: ac.signal,
    dispose() {
      for (const s of STOP_SIGNALS) process.off(s, onSignal);
    },
  };
}

/**
 * Runs the CLI over `commands` and returns the exit status (0 ok, 1 failure, 2 usage error, 130
 * interrupted). `main.ts` passes every command; an entry for one command (view-main.ts) passes
 * only it, so its process does not load the others' modules.
 */
export async function runCli(
  commands: readonly Command[],
  argv: readonly string[],
  ctx?: CliContext,
): Promise<number> {
  const own = ctx ? undefined : defaultContext();
  const c = ctx ?? own!;
  try {
    if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
      c.stdout.write(renderMainHelp(commands, FLAKEGYM_VERSION));
      return 0;
    }
    if (argv[0] === "--version" || argv[0] === "-V") {
      c.stdout.write(`${FLAKEGYM_VERSION}\n`);
      return 0;
    }
    const found = findCommand(commands, argv);
    const group = found ? undefined : groupHelpRequest(commands, argv);
    if (group !== undefined) {
      c.stdout.write(renderGroupHelp(group, commandGroups(commands).get(group)!));
      return 0;
    }
    if (!found) {
      const groups = commands.filter((cmd) => cmd.path[0] === argv[0]);
      const known = groups.length ? groups : commands;
      throw new UsageError(
        `unknown command '${argv.filter((a) => !a.startsWith("-")).join(" ")}'`,
        `available: ${known.map((cmd) => cmd.path.join(" ")).join(", ")} (see flakegym --help)`,
      );
    }
    if (found.rest.includes("--help") || found.rest.includes("-h")) {
      const path = found.cmd.path;
      const subcommands = commands.filter(
        (o) => o.path.length > path.length && path.every((w, i) => o.path[i] === w),
      );
      c.stdout.write(renderCommandHelp(found.cmd, subcommands));
      return 0;
    }
    const options = parseArgs(found.cmd.options, found.rest, found.cmd.positional);
    return await found.cmd.run(options, c);
  } catch (err) {
    c.stderr.write(`${describeError(err)}\n`);
    if (err instanceof UsageError) return 2;
    if (c.signal.aborted) return 130;
    return 1;
  } finally {
    own?.dispose();
  }
}
