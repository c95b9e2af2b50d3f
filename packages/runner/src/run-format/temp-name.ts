import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";

/**
 * The one temporary name every whole-file writer uses beside its target:
 * `.<name>.<pid>.<rand>.tmp`. The random part keeps two writers of one target apart (two workers
 * of one process in the same millisecond made the same name before, and one renamed the other's
 * file away); the pid lets `flakegym gc` judge a killed writer's temp (gc/stale-temps.ts
 * `atomicTempPid`) wherever flakegym writes: run, eval and export outputs, the cache.
 */
export function tempPathBeside(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
}
