import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, rename, rmdir, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { match } from "ts-pattern";
import { UsageError } from "../errors.js";
import { selfOwner, startTimeOfStat } from "../gc/owner.js";
import {
  decideLock,
  describeHolder,
  type LockDecision,
  type LockHere,
  RunLockRecord,
} from "./run-lock-decision.js";

/** The lock file of a run directory; its presence with a live holder means "in use". */
export const RUN_LOCK_FILE = "run.lock";

/** Files of the lock itself, which an otherwise empty run directory may hold. */
export const isLockFile = (name: string) => name === RUN_LOCK_FILE || name.startsWith(`.${RUN_LOCK_FILE}.`);

/**
 * What to do about a held directory: while its holder runs, wait or stop it and then continue it
 * the way its own command continues (never "remove the lock" — that would let two writers in);
 * only when its holder cannot be judged, remove the lock once nothing uses the directory. Pure.
 */
export function lockedHint(dir: string, holder: RunLockRecord | undefined, why: string): string {
  if (!holder || !why.endsWith("is running"))
    return `if no flakegym process uses ${dir} any more, remove ${join(dir, RUN_LOCK_FILE)}`;
  const then = match(holder.command)
    .with("rollout", () => `then \`flakegym rollout --resume ${dir}\``)
    .with("eval", () => `then \`flakegym eval --resume ${dir}\``)
    .with("serve", () => "then POST the group again to the server that runs (it resumes it)")
    .with("env", () => "then make the call again")
    .exhaustive();
  return `wait for it to finish, or stop it (kill ${holder.pid}), ${then}; a lock left by a dead holder is taken over by itself`;
}

/** The run directory is held by a live runner (or one that cannot be judged). Exit status 2. */
export class RunDirLockedError extends UsageError {
  override readonly name = "RunDirLockedError";
  constructor(
    dir: string,
    readonly holder: RunLockRecord | undefined,
    why: string,
  ) {
    super(
      `the run directory ${dir} is in use by ${describeHolder(holder)}: ${why}`,
      lockedHint(dir, holder, why),
      "E_RUN_LOCKED",
    );
  }
}

/** A held run directory lock. */
export interface RunLock {
  readonly path: string;
  readonly record: RunLockRecord;
  /** Removes the lock if it is still ours (and the directory, if the lock made it and it is empty). */
  release(): Promise<void>;
}

async function readRecord(file: string): Promise<RunLockRecord | undefined | "absent"> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    return undefined;
  }
  try {
    const r = RunLockRecord.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

async function pidStartTime(pid: number): Promise<string | undefined> {
  return startTimeOfStat(await readFile(`/proc/${pid}/stat`, "utf8").catch(() => ""));
}

/** This process's place, from which a lock's holder is judged. */
function lockHere(): LockHere {
  const owner = selfOwner();
  return { host: hostname(), bootId: owner.bootId, pidNs: owner.pidNs ?? "" };
}

/**
 * Whether a lock's holder (undefined: an unreadable record) still holds it, judged from this
 * process with the holder pid's start time read now ({@link decideLock}). The runner taking a lock
 * and the viewer showing a run's state judge alike.
 */
export async function judgeHolder(holder: RunLockRecord | undefined): Promise<LockDecision> {
  return decideLock(holder, lockHere(), holder ? await pidStartTime(holder.pid) : undefined);
}

/**
 * Moves a dead holder's lock aside, but only if it is still the record that was judged dead: a
 * lock a faster process took meanwhile is put back.
 */
async function breakLock(file: string, judged: RunLockRecord): Promise<void> {
  const grave = `${file}.stale-${process.pid}-${randomBytes(3).toString("hex")}`;
  try {
    await rename(file, grave);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // released or broken meanwhile
    throw err;
  }
  const moved = await readRecord(grave);
  if (typeof moved === "object" && moved.nonce !== judged.nonce) await link(grave, file).catch(() => {});
  await unlink(grave).catch(() => {});
}

/**
 * Takes the exclusive lock of run directory `dir` (made if missing) for this process. The record is
 * written whole to a temp file and hard-linked into place, so the lock exists only with its holder
 * named (link fails when one exists). A lock whose holder is dead is taken over; a live (or
 * unjudgeable) holder makes this throw {@link RunDirLockedError}.
 */
export async function acquireRunLock(dir: string, command: RunLockRecord["command"]): Promise<RunLock> {
  const made = (await mkdir(dir, { recursive: true })) !== undefined;
  const here = lockHere();
  const record: RunLockRecord = {
    ...selfOwner(),
    pidNs: here.pidNs,
    host: here.host,
    command,
    startedAt: new Date().toISOString(),
    nonce: randomBytes(8).toString("hex"),
  };
  const file = join(dir, RUN_LOCK_FILE);
  const tmp = join(dir, `.${RUN_LOCK_FILE}.${process.pid}.${record.nonce}`);
  await writeFile(tmp, `${JSON.stringify(record)}\n`);
  try {
    for (let round = 0; round < 5; round++) {
      try {
        await link(tmp, file);
        return { path: file, record, release: () => releaseRunLock(dir, record, made) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      const holder = await readRecord(file);
      if (holder === "absent") continue;
      const d = await judgeHolder(holder);
      if (d.kind === "held") throw new RunDirLockedError(dir, holder, d.why);
      await breakLock(file, holder!);
    }
    const holder = await readRecord(file);
    throw new RunDirLockedError(
      dir,
      typeof holder === "object" ? holder : undefined,
      "others keep taking it",
    );
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

async function releaseRunLock(dir: string, record: RunLockRecord, made: boolean): Promise<void> {
  const file = join(dir, RUN_LOCK_FILE);
  const now = await readRecord(file);
  if (typeof now === "object" && now.nonce === record.nonce) await unlink(file).catch(() => {});
  // a run that never started leaves no empty directory behind it
  if (made) await rmdir(dir).catch(() => {});
}
