import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { extname } from "node:path";
import { createInterface } from "node:readline";
import { loadProfiles, type ProfilesFile } from "@flakegym/profiles";
import { asyncBufferFromFile, parquetReadObjects } from "hyparquet";
import { FlakegymError, UsageError } from "../errors.js";
import { parseDatasetRow, type RowError } from "./dataset-row.js";
import type { TaskProfile } from "./task-profile.js";

export type DatasetFormat = "jsonl" | "parquet";

/** Counts for one dataset file. */
export interface DatasetSummary {
  readonly file: string;
  readonly format: DatasetFormat;
  readonly rows: number;
  readonly accepted: number;
  readonly rejected: number;
}

export interface LoadedDataset {
  readonly tasks: TaskProfile[];
  readonly rejected: RowError[];
  readonly summary: DatasetSummary;
}

export interface LoadDatasetOptions {
  readonly signal?: AbortSignal;
  /** Force a format instead of detecting it from the extension / Parquet magic. */
  readonly format?: DatasetFormat;
  readonly profiles?: ProfilesFile;
  /** Called every `progressEvery` rows with the rows read so far. */
  readonly onProgress?: (rowsRead: number) => void;
  readonly progressEvery?: number;
}

/** Detects the format from the extension, else from the `PAR1` magic bytes. */
export async function detectDatasetFormat(file: string): Promise<DatasetFormat> {
  const ext = extname(file).toLowerCase();
  if (ext === ".parquet" || ext === ".pq") return "parquet";
  if (ext === ".jsonl" || ext === ".ndjson") return "jsonl";
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(4);
    await fh.read(buf, 0, 4, 0);
    return buf.toString("latin1") === "PAR1" ? "parquet" : "jsonl";
  } finally {
    await fh.close();
  }
}

async function* jsonlRows(
  file: string,
  signal?: AbortSignal,
): AsyncGenerator<{ row: number; value: unknown }> {
  const stream = createReadStream(file, { encoding: "utf8", ...(signal ? { signal } : {}) });
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  let row = 0;
  try {
    for await (const line of lines) {
      row++;
      if (line.trim() === "") continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (err) {
        value = new SyntaxError(`line is not valid JSON: ${(err as Error).message}`);
      }
      yield { row, value };
    }
  } finally {
    lines.close();
    stream.destroy();
  }
}

async function* parquetRows(
  file: string,
  signal?: AbortSignal,
): AsyncGenerator<{ row: number; value: unknown }> {
  let objects: Record<string, unknown>[];
  try {
    const buffer = await asyncBufferFromFile(file);
    objects = await parquetReadObjects({ file: buffer });
  } catch (cause) {
    throw new FlakegymError("E_DATASET", `${file}: cannot read as Parquet: ${(cause as Error).message}`, {
      cause,
      hint: "check that the file is a complete Parquet file (or pass a .jsonl file)",
    });
  }
  for (let i = 0; i < objects.length; i++) {
    signal?.throwIfAborted();
    yield { row: i + 1, value: objects[i] };
  }
}

/** The raw rows of a dataset file, 1-based; a JSONL line that is not JSON comes as a SyntaxError. */
export function datasetRows(
  file: string,
  format: DatasetFormat,
  signal?: AbortSignal,
): AsyncGenerator<{ row: number; value: unknown }> {
  return format === "parquet" ? parquetRows(file, signal) : jsonlRows(file, signal);
}

/**
 * The usage error (exit 2) for a `--dataset` path that is not there or not readable: names the path
 * and what was wrong, and says what to do instead of repeating the flag.
 */
export function datasetPathError(path: string, cause: Error): UsageError {
  const what =
    (cause as NodeJS.ErrnoException).code === "ENOENT" ? "no such file or directory" : cause.message;
  const err = new UsageError(
    `--dataset ${path}: ${what}`,
    "check the path (a relative path starts at the current directory); a dataset is a .jsonl or .parquet file of rows, or a Harbor task directory (docs/reference/tasks.md)",
    "E_DATASET",
  );
  err.cause = cause;
  return err;
}

/** Throws a usage error naming the file when it is not a readable regular file. */
export async function assertDatasetFile(file: string): Promise<void> {
  const st = await stat(file).catch((cause: Error) => {
    throw datasetPathError(file, cause);
  });
  if (!st.isFile())
    throw datasetPathError(file, new Error("not a regular file (a dataset file is .jsonl or .parquet)"));
}

/**
 * Reads a dataset file (JSONL or Parquet) in the swe-agent-13k schema. Bad rows are collected as
 * `RowError`s (file, row, field, reason) and the rest are returned; the summary counts both.
 * Throws only when the file itself cannot be read.
 */
export async function loadDataset(file: string, options: LoadDatasetOptions = {}): Promise<LoadedDataset> {
  await assertDatasetFile(file);
  const format = options.format ?? (await detectDatasetFormat(file));
  const profiles = options.profiles ?? loadProfiles();
  const every = options.progressEvery ?? 1000;
  const tasks: TaskProfile[] = [];
  const rejected: RowError[] = [];
  const seen = new Map<string, number>();
  let rows = 0;
  const source = datasetRows(file, format, options.signal);
  for await (const { row, value } of source) {
    rows++;
    if (options.onProgress && rows % every === 0) options.onProgress(rows);
    if (value instanceof SyntaxError) {
      rejected.push({ file, row, field: "(row)", reason: value.message });
      continue;
    }
    const r = parseDatasetRow(value, { file, row }, profiles);
    if (!r.ok) {
      rejected.push(r.error);
      continue;
    }
    const first = seen.get(r.task.id);
    if (first !== undefined) {
      rejected.push({
        file,
        row,
        field: "id",
        reason: `duplicate id '${r.task.id}' (first seen in row ${first})`,
        id: r.task.id,
      });
      continue;
    }
    seen.set(r.task.id, row);
    tasks.push(r.task);
  }
  return {
    tasks,
    rejected,
    summary: { file, format, rows, accepted: tasks.length, rejected: rejected.length },
  };
}

/** One line for a rejected row: `file:row: field 'x': reason`. */
export function formatRowError(e: RowError): string {
  return `${e.file}:${e.row}: ${e.id === undefined ? "" : `[${e.id}] `}field '${e.field}': ${e.reason}`;
}
