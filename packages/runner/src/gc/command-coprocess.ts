import { type ChildProcess, spawn } from "node:child_process";
import { execa } from "execa";

/**
 * Short host commands (mount, umount) run by one long-lived `sh` instead of a spawn each.
 *
 * A spawn from the runner forks the runner: its cost grows with the runner's memory, and it runs
 * on the event loop. With a thousand trajectories at once every fork of a snapshot (two mounts,
 * two unmounts) made the runner's CPU per trajectory grow with the count and held its event loop
 * for tens of ms each (issue 49). The coprocess forks itself — a few hundred KB — and answers
 * over a pipe. Up to four such sh run side by side, each its commands in order; each command is
 * bounded by `timeout`. When the
 * coprocess cannot run (or dies), commands fall back to a spawn each: slower, never lost.
 */

export interface CommandResult {
  readonly exitCode: number;
  /** stdout and stderr together (the commands run here say little on success). */
  readonly output: string;
}

/** `arg` quoted for sh: single quotes, an embedded one closed, escaped and reopened. Pure. */
export function shQuote(arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`;
}

/**
 * The sh line that runs `argv` (bounded by `timeoutS`, stdin closed) and prints `<id> <rc> <bytes>`
 * then its output. Pure.
 */
export function jobLine(id: number, argv: readonly string[], timeoutS: number): string {
  const cmd = ["timeout", String(timeoutS), ...argv].map(shQuote).join(" ");
  return `o=$(${cmd} 2>&1 </dev/null); r=$?; printf '%s %s %s\\n' ${id} "$r" "\${#o}"; printf '%s' "$o"\n`;
}

/** The next whole answer at the start of `buf`, or undefined while it is still arriving. Pure. */
export function parseAnswer(buf: Buffer): { id: number; result: CommandResult; rest: Buffer } | undefined {
  const nl = buf.indexOf(10);
  if (nl < 0) return undefined;
  const m = /^(\d+) (\d+) (\d+)$/.exec(buf.subarray(0, nl).toString("latin1"));
  if (!m)
    throw new Error(
      `command coprocess: unreadable answer head ${JSON.stringify(buf.subarray(0, nl).toString())}`,
    );
  const len = Number(m[3]);
  if (buf.length < nl + 1 + len) return undefined;
  return {
    id: Number(m[1]),
    result: { exitCode: Number(m[2]), output: buf.subarray(nl + 1, nl + 1 + len).toString("utf8") },
    rest: buf.subarray(nl + 1 + len),
  };
}

interface Pending {
  resolve(r: CommandResult): void;
  readonly argv: readonly string[];
  readonly timeoutS: number;
}

/** One sh and what it was asked. */
interface Coprocess {
  readonly child: ChildProcess;
  buf: Buffer;
  readonly pending: Map<number, Pending>;
  dead: boolean;
}

/**
 * How many sh run commands side by side: a fork of a snapshot waits for its two mounts, so a
 * single one made a thousand trajectories' starts queue behind each other.
 */
export const COPROCESSES = 4;
const pool: Coprocess[] = [];
let nextId = 0;

/** Every command still waiting on a dead coprocess runs as its own spawn. */
function failOver(c: Coprocess): void {
  if (c.dead) return;
  c.dead = true;
  pool.splice(pool.indexOf(c), 1);
  const waiting = [...c.pending.values()];
  c.pending.clear();
  for (const p of waiting) void spawnOne(p.argv, p.timeoutS).then(p.resolve);
}

function startCoprocess(): Coprocess {
  // LC_ALL=C: ${#o} counts bytes, as parseAnswer reads them
  const child = spawn("sh", ["-s"], {
    stdio: ["pipe", "pipe", "ignore"],
    env: { ...process.env, LC_ALL: "C" },
  });
  const c: Coprocess = { child, buf: Buffer.alloc(0), pending: new Map(), dead: false };
  child.unref();
  for (const s of [child.stdin, child.stdout] as const) (s as unknown as { unref?: () => void }).unref?.();
  child.stdin!.on("error", () => {});
  child.stdout!.on("data", (d: Buffer) => {
    c.buf = Buffer.concat([c.buf, d]);
    for (let a = parseAnswer(c.buf); a; a = parseAnswer(c.buf)) {
      c.buf = a.rest;
      const p = c.pending.get(a.id);
      c.pending.delete(a.id);
      if (c.pending.size === 0) child.unref();
      p?.resolve(a.result);
    }
  });
  child.once("error", () => failOver(c));
  child.once("exit", () => failOver(c));
  pool.push(c);
  return c;
}

/** The least busy coprocess, a new one while there are fewer than {@link COPROCESSES}. */
function pick(): Coprocess {
  const idle = pool.find((c) => c.pending.size === 0);
  if (idle) return idle;
  if (pool.length < COPROCESSES) return startCoprocess();
  return pool.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
}

async function spawnOne(argv: readonly string[], timeoutS: number): Promise<CommandResult> {
  const r = await execa(argv[0]!, argv.slice(1), {
    reject: false,
    timeout: timeoutS * 1000,
    stdin: "ignore",
    all: true,
  });
  return { exitCode: r.exitCode ?? 1, output: r.all ?? "" };
}

/** Runs `argv` in a coprocess (or, without one, as a spawn of its own). Never rejects. */
export function runHostCommand(argv: readonly string[], timeoutS: number): Promise<CommandResult> {
  return new Promise((resolve) => {
    const id = ++nextId;
    const c = pick();
    // ref'd while a command is under way: the process waits for its answer
    c.child.ref();
    c.pending.set(id, { argv, timeoutS, resolve });
    c.child.stdin!.write(jobLine(id, argv, timeoutS));
  });
}
