import { stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  assertDatasetFile,
  type DatasetFormat,
  type DatasetSummary,
  datasetRows,
  detectDatasetFormat,
} from "./dataset.js";
import type { RowError } from "./dataset-row.js";
import { mirrorCandidates } from "./repo-mirror.js";
import { type IntakeTask, isSwebenchRow, parseSwebenchRow, type SwebenchIntakeOptions } from "./swebench.js";

/** The schema a dataset file's rows are in, told by its first object row. */
export type DatasetSchema = "swe-agent" | "swebench";

export interface LoadedSwebench {
  readonly tasks: IntakeTask[];
  readonly rejected: RowError[];
  readonly summary: DatasetSummary;
}

/** The schema of a dataset file: SWE-bench family when its first row has an `instance_id`. */
export async function detectDatasetSchema(file: string, signal?: AbortSignal): Promise<DatasetSchema> {
  await assertDatasetFile(file);
  const rows = datasetRows(file, await detectDatasetFormat(file), signal);
  try {
    for await (const { value } of rows) {
      if (value instanceof SyntaxError) continue;
      return isSwebenchRow(value) ? "swebench" : "swe-agent";
    }
  } finally {
    await rows.return(undefined);
  }
  return "swe-agent";
}

/**
 * Reads a SWE-bench-family dataset file (JSONL or Parquet) into tasks with hidden tests. Bad rows
 * are collected as `RowError`s (file, row, field, reason) and the rest proceed; a task id seen
 * twice is rejected the second time. Throws only when the file itself cannot be read.
 */
export async function loadSwebench(
  file: string,
  o: { signal?: AbortSignal; format?: DatasetFormat } & SwebenchIntakeOptions = {},
): Promise<LoadedSwebench> {
  await assertDatasetFile(file);
  const format = o.format ?? (await detectDatasetFormat(file));
  const tasks: IntakeTask[] = [];
  const rejected: RowError[] = [];
  const seen = new Map<string, number>();
  let rows = 0;
  for await (const { row, value } of datasetRows(file, format, o.signal)) {
    rows++;
    if (value instanceof SyntaxError) {
      rejected.push({ file, row, field: "(row)", reason: value.message });
      continue;
    }
    const r = parseSwebenchRow(
      value,
      { file, row },
      o.repoMirror === undefined ? {} : { repoMirror: o.repoMirror },
    );
    if (!r.ok) {
      rejected.push(r.error);
      continue;
    }
    const task = o.repoMirror === undefined ? r.task : await mirrorVariant(r.task, o.repoMirror);
    const missing = await missingLocalRepo(task, o.repoMirror);
    if (missing) {
      rejected.push({ file, row, ...missing, id: r.task.spec.metadata?.instance_id ?? r.task.spec.id });
      continue;
    }
    const id = r.task.spec.id;
    const first = seen.get(id);
    if (first !== undefined) {
      rejected.push({
        file,
        row,
        field: "instance_id",
        reason: `duplicate task id '${id}' (first seen in row ${first}): drop one of the two rows, or give this one another instance_id`,
        id,
      });
      continue;
    }
    seen.set(id, row);
    tasks.push(task);
  }
  return {
    tasks,
    rejected,
    summary: { file, format, rows, accepted: tasks.length, rejected: rejected.length },
  };
}

/**
 * Why a row's local repository source cannot be used (it does not exist, or is no directory), or
 * undefined: rows naming a local path or `file://` URL, or mapped by `--repo-mirror`, are checked
 * at intake so a missing clone is named here rather than failing later as "needs network".
 */
async function missingLocalRepo(
  task: IntakeTask,
  repoMirror: string | undefined,
): Promise<{ field: string; reason: string } | undefined> {
  const src = task.spec.source;
  // a local source is checked whatever the task's network (a row whose install fetches needs it at build)
  if (src.kind !== "git") return undefined;
  const path = src.url.startsWith("file://") ? fileURLToPath(src.url) : src.url;
  if (!path.startsWith("/")) return undefined;
  const st = await stat(path).catch(() => undefined);
  if (st?.isDirectory()) return undefined;
  const repo = task.spec.metadata?.repo ?? "";
  const what = st ? "is not a directory" : "does not exist";
  if (repoMirror !== undefined && !repo.startsWith("/") && !repo.startsWith(".")) {
    return {
      field: "repo",
      reason: `'${repo}' has no mirror: ${path} ${what}; clone it there (git clone --mirror <url> ${path}) or drop the row`,
    };
  }
  return {
    field: task.spec.metadata?.repo_url === undefined ? "repo" : "repo_url",
    reason: `local repository ${path} ${what}; clone the repository there, fix the column, or pass --repo-mirror DIR holding DIR/owner/repo`,
  };
}

const isDir = async (p: string) => (await stat(p).catch(() => undefined))?.isDirectory() ?? false;

/**
 * The task with its mirrored source at the first of mirrorCandidates that exists (`DIR/owner/repo`,
 * `DIR/owner/repo.git`, `DIR/owner__repo`, `DIR/owner+repo/repo`); unchanged when none does
 * (missingLocalRepo then names the first) or the row was not mapped by the mirror.
 */
async function mirrorVariant(task: IntakeTask, mirror: string): Promise<IntakeTask> {
  const src = task.spec.source;
  const repo = task.spec.metadata?.repo;
  if (src.kind !== "git" || repo === undefined || src.url !== join(mirror, repo)) return task;
  for (const url of mirrorCandidates(mirror, repo)) {
    if (await isDir(url))
      return url === src.url ? task : { ...task, spec: { ...task.spec, source: { ...src, url } } };
  }
  return task;
}
