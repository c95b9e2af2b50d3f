import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { replaceDir, TASK_FILES } from "@flakegym/cline-vendor";
import { createDeadline, type NomadClient, NomadError } from "@flakegym/nomad-jobs";
import type { CollectArtifactsInput } from "../types.js";
import { NomadWorkerError } from "./errors.js";
import { fetchSupervisorDiff } from "./supervisor-diff.js";

/**
 * Artifacts of a Nomad agent worker, without a shared filesystem: the diff comes from the
 * worker's supervisor over the runner's own authenticated connection to the core's gate
 * (`fetchSupervisorDiff`: computed by the supervisor from the workspace against the base it sealed
 * at boot, streamed to the artifact dir under a size bound, accepted only for this request's
 * sequence number); Cline's task files through `/v1/client/fs/cat`, each under a size bound. The
 * result is the same directory the local backend writes.
 */

/** FLAKEGYM_CONFIG_DIR (`${NOMAD_ALLOC_DIR}/cline`) as a path of the allocation's filesystem API. */
export const ALLOC_CONFIG_DIR = "alloc/cline";
/** The bound on each Cline task file read through fs/cat (a conversation of a long task fits). */
export const MAX_TASK_FILE_BYTES = 256 * 1024 * 1024;

/** Cline's task ids are plain names; anything else would make the fs/cat path leave the task dir. */
const SAFE_TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A missing file: Nomad answers 400 ("no such file or directory") or 404. */
const isMissing = (err: unknown) => err instanceof NomadError && (err.status === 400 || err.status === 404);

export interface CollectFromAllocationOptions {
  readonly namespace?: string | undefined;
  /** This collection's number on the worker (1, 2, …): the supervisor's answer must echo it. */
  readonly seq: number;
  /** The core's published address and the worker's core token: where and how to ask the supervisor. */
  readonly agentAddress: string;
  readonly agentToken: string;
  readonly maxDiffBytes?: number;
  readonly maxFileBytes?: number;
}

export async function collectFromAllocation(
  client: NomadClient,
  allocId: string,
  c: CollectArtifactsInput,
  o: CollectFromAllocationOptions,
): Promise<void> {
  const limit = { ms: c.timeoutMs ?? 60_000, limit: "the artifact collection's timeoutMs" };
  using deadline = createDeadline({ signals: [c.signal], timeout: limit });
  const signal = deadline.signal;
  const ns = o.namespace ? { namespace: o.namespace } : {};
  const fail = (message: string, cause?: unknown) =>
    new NomadWorkerError("E_NOMAD_ARTIFACTS", `allocation ${allocId}: ${message}`, {
      allocId,
      ...(cause ? { cause } : {}),
      hint: `the worker's supervisor must run with --diff-dir (the image entrypoint flakegym-worker passes it) and FLAKEGYM_CORE_TOKEN; read 'nomad alloc logs -stderr ${allocId}'`,
    });
  const timedOut = () =>
    c.signal.aborted ? c.signal.reason : fail(`no diff within ${limit.limit} (${limit.ms} ms)`);

  const dest = resolve(c.dest);
  const tmp = `${dest}.tmp-${randomBytes(6).toString("hex")}`;
  await mkdir(tmp, { recursive: true });
  try {
    const info = await fetchSupervisorDiff({
      address: o.agentAddress,
      token: o.agentToken,
      seq: o.seq,
      file: `${tmp}/diff.patch`,
      ...(o.maxDiffBytes ? { maxBytes: o.maxDiffBytes } : {}),
      signal,
    }).catch((err: unknown) => {
      throw signal.aborted ? timedOut() : fail((err as Error).message, err);
    });
    if (info.error && !info.unsafe) throw fail(`the supervisor could not compute the diff: ${info.error}`);
    const files: { name: string; bytes: number }[] = [];
    if (!info.error) files.push({ name: "diff.patch", bytes: info.bytes ?? 0 });
    else await rm(`${tmp}/diff.patch`, { force: true });
    const missing: string[] = [];
    for (const name of TASK_FILES) {
      const data = SAFE_TASK_ID.test(c.taskId)
        ? await catOrMissing(client, allocId, `${ALLOC_CONFIG_DIR}/data/tasks/${c.taskId}/${name}`, {
            signal,
            maxBytes: o.maxFileBytes ?? MAX_TASK_FILE_BYTES,
            ...ns,
          }).catch((err: unknown) => {
            throw signal.aborted ? timedOut() : err;
          })
        : undefined;
      if (!data) {
        missing.push(name);
        continue;
      }
      await writeFile(`${tmp}/${name}`, data);
      files.push({ name, bytes: data.length });
    }
    for (const [name, value] of Object.entries(c.extra ?? {})) {
      const data =
        typeof value === "string" || Buffer.isBuffer(value) ? value : `${JSON.stringify(value, null, 2)}\n`;
      const buf = Buffer.from(data);
      await writeFile(`${tmp}/${name}`, buf);
      files.push({ name, bytes: buf.length });
    }
    const manifest = {
      files,
      missing,
      baseCommit: info.baseCommit ?? null,
      excluded: info.excluded ?? [],
      excludedTotal: info.excludedTotal ?? 0,
      ...(info.unsafe ? { diffError: info.error } : {}),
    };
    await writeFile(`${tmp}/manifest.json`, `${JSON.stringify(manifest, null, 2)}\n`);
    await replaceDir(tmp, dest);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** A file of the allocation, or undefined when it does not exist. */
async function catOrMissing(
  client: NomadClient,
  allocId: string,
  path: string,
  opts: { signal: AbortSignal; maxBytes: number; namespace?: string },
): Promise<Buffer | undefined> {
  try {
    return (await client.fs.cat(allocId, path, opts)).data;
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}
