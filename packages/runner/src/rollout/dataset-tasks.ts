import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import { FlakegymError } from "../errors.js";
import type { RunConfig } from "../run-format/schema.js";
import { type DatasetSummary, loadDataset } from "../tasks/dataset.js";
import type { RowError } from "../tasks/dataset-row.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import type { RunDatasetSummary } from "./summary.js";

/**
 * Dataset intake for `rollout --dataset`: which rows a run uses (the first `--limit` accepted rows,
 * in file order), the file's sha256 for provenance and resume, and the same selection again from
 * run.json when resuming — refused when the file changed since.
 */

/** What a dataset run rolls out, and what it left out. */
export interface DatasetSelection {
  /** The rows to roll out, in file order (local repo paths made absolute). */
  readonly tasks: readonly TaskProfile[];
  /** Rows the run cannot use: rejected by the schema, or with an id unusable as a trajectory id. */
  readonly rejected: readonly RowError[];
  readonly summary: DatasetSummary;
  /** `config.dataset` of the run. */
  readonly config: NonNullable<RunConfig["dataset"]>;
}

/** Ids become directory names (`trajectories/<id>-t<i>`): letters, digits, `.`, `_`, `-` only. */
const SAFE_ID = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/** Why a row's id cannot name its trajectories, or undefined. Pure. */
export function idProblem(id: string): string | undefined {
  if (SAFE_ID.test(id)) return undefined;
  return `'${id}' cannot name trajectory directories: use letters, digits, '.', '_' and '-' (at most 128, not starting with '.' or '-')`;
}

/**
 * Picks the rows a run uses: accepted rows with usable ids, the first `limit` of them, local repo
 * paths resolved against the dataset file's directory. Pure.
 */
export function selectRows(
  file: string,
  accepted: readonly TaskProfile[],
  limit: number | undefined,
): { tasks: TaskProfile[]; rejected: RowError[] } {
  const rejected: RowError[] = [];
  const usable: TaskProfile[] = [];
  for (const t of accepted) {
    const problem = idProblem(t.id);
    if (problem) rejected.push({ file, row: t.source.row, field: "id", reason: problem, id: t.id });
    else usable.push(t);
  }
  const tasks = usable
    .slice(0, limit ?? usable.length)
    .map((t) =>
      t.repoKind === "local" && !isAbsolute(t.repoUrl)
        ? { ...t, repoUrl: resolve(dirname(file), t.repoUrl) }
        : t,
    );
  return { tasks, rejected };
}

/** sha256 of a file, streamed. */
export async function sha256File(file: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file, signal ? { signal } : {}), hash);
  return hash.digest("hex");
}

export interface LoadSelectionOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: (rowsRead: number) => void;
}

/** A new dataset run: reads `file`, selects its rows, hashes it. Throws when no row is usable. */
export async function selectDataset(
  file: string,
  limit: number | undefined,
  o: LoadSelectionOptions = {},
): Promise<DatasetSelection> {
  const d = await loadDataset(file, {
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  const sha256 = await sha256File(file, o.signal);
  const picked = selectRows(file, d.tasks, limit);
  const rejected = [...d.rejected, ...picked.rejected].sort((a, b) => a.row - b.row);
  if (picked.tasks.length === 0) {
    throw new FlakegymError(
      "E_DATASET",
      `${file}: no usable row (${d.summary.rows} read, ${rejected.length} rejected)`,
      { hint: `see why with: flakegym tasks check --dataset ${file}` },
    );
  }
  return {
    tasks: picked.tasks,
    rejected,
    summary: {
      ...d.summary,
      accepted: d.summary.accepted - picked.rejected.length,
      rejected: rejected.length,
    },
    config: { file, sha256, format: d.summary.format, ...(limit !== undefined ? { limit } : {}) },
  };
}

/**
 * A resumed dataset run: the rows `run.json` names, from the same file. Refuses a file whose
 * sha256 differs from the stored one (the run's rows would silently change).
 */
export async function reselectDataset(
  stored: NonNullable<RunConfig["dataset"]>,
  rowIds: readonly string[],
  o: LoadSelectionOptions = {},
): Promise<DatasetSelection> {
  let sha256: string;
  try {
    sha256 = await sha256File(stored.file, o.signal);
  } catch (cause) {
    throw new FlakegymError(
      "E_DATASET_CHANGED",
      `the run's dataset file ${stored.file} cannot be read: ${(cause as Error).message}`,
      { cause, hint: "put the file back where run.json says it was, unchanged, then resume again" },
    );
  }
  if (sha256 !== stored.sha256) {
    throw new FlakegymError(
      "E_DATASET_CHANGED",
      `the run's dataset file ${stored.file} changed since the run started (sha256 ${sha256.slice(0, 12)}…, run.json has ${stored.sha256.slice(0, 12)}…)`,
      {
        hint: "restore the original file to resume this run, or start a new run with --dataset on the changed file",
      },
    );
  }
  const sel = await selectDataset(stored.file, stored.limit, o);
  const byId = new Map(sel.tasks.map((t) => [t.id, t]));
  const missing = rowIds.filter((id) => !byId.has(id));
  if (missing.length > 0) {
    // same bytes, different reading: the schema or the selection rules changed between versions
    throw new FlakegymError(
      "E_DATASET_CHANGED",
      `rows ${missing.join(", ")} of ${stored.file} named in run.json are not selected any more by this flakegym version`,
      { hint: "resume with the flakegym version that started the run, or start a new run" },
    );
  }
  return { ...sel, tasks: rowIds.map((id) => byId.get(id)!) };
}

/** What summary.json says about the dataset. Pure. */
export function datasetSummaryOf(sel: DatasetSelection): RunDatasetSummary {
  return {
    file: sel.config.file,
    sha256: sel.config.sha256,
    rows: sel.summary.rows,
    accepted: sel.summary.accepted,
    rejected: sel.summary.rejected,
    used: sel.tasks.length,
    rejectedRows: sel.rejected.map((e) => ({
      row: e.row,
      field: e.field,
      reason: e.reason,
      ...(e.id !== undefined ? { id: e.id } : {}),
    })),
  };
}
