import { stat } from "node:fs/promises";
import { type DatasetSummary, datasetPathError, formatRowError, loadDataset } from "./dataset.js";
import type { RowError } from "./dataset-row.js";
import { type HarborReadOptions, loadHarbor } from "./harbor-dir.js";
import { COLUMN_ALIASES, type IntakeTask, SwebenchRow } from "./swebench.js";
import { detectDatasetSchema, loadSwebench } from "./swebench-dataset.js";
import type { TaskProfile } from "./task-profile.js";

/**
 * One entry point for everything `--dataset` takes: a swe-agent-13k file (rows without hidden
 * tests), a SWE-bench-family file (rows → tasks with hidden tests) or a directory of Harbor task
 * directories (→ tasks with hidden tests). Told apart by what the path is and by the first row.
 */

export type IntakeKind = "swe-agent" | "swebench" | "harbor";

export interface IntakeSummary {
  readonly kind: IntakeKind;
  /** The dataset file, or the directory of Harbor task dirs. */
  readonly file: string;
  /** Rows read, or Harbor task directories found. */
  readonly rows: number;
  readonly accepted: number;
  readonly rejected: number;
  /** The file format of a dataset file. */
  readonly format?: DatasetSummary["format"];
}

export interface LoadedIntake {
  readonly summary: IntakeSummary;
  readonly rejected: RowError[];
  /** Tasks with hidden tests (SWE-bench rows, Harbor dirs); empty for swe-agent rows. */
  readonly tasks: IntakeTask[];
  /** The accepted swe-agent rows (no hidden tests: scored by build, lint and judge; row-reward.ts). */
  readonly rows?: TaskProfile[];
}

/** What kind of input `path` is. */
export async function intakeKind(path: string, signal?: AbortSignal): Promise<IntakeKind> {
  const st = await stat(path).catch((cause: Error) => {
    throw datasetPathError(path, cause);
  });
  if (st.isDirectory()) return "harbor";
  return await detectDatasetSchema(path, signal);
}

/** Reads any intake input; bad rows/dirs are listed with the reason and the rest proceed. */
export async function loadIntake(
  path: string,
  o: {
    signal?: AbortSignal;
    onProgress?: (rows: number) => void;
    repoMirror?: string;
    buildEnv?: HarborReadOptions["buildEnv"];
  } = {},
): Promise<LoadedIntake> {
  const kind = await intakeKind(path, o.signal);
  if (kind === "harbor") {
    const h = await loadHarbor(path, o.buildEnv ? { buildEnv: o.buildEnv } : {});
    return {
      summary: { kind, file: path, rows: h.dirs, accepted: h.tasks.length, rejected: h.rejected.length },
      rejected: h.rejected,
      tasks: h.tasks,
    };
  }
  if (kind === "swebench") {
    const d = await loadSwebench(path, {
      ...(o.signal ? { signal: o.signal } : {}),
      ...(o.repoMirror === undefined ? {} : { repoMirror: o.repoMirror }),
    });
    const s = d.summary;
    return {
      summary: {
        kind,
        file: path,
        rows: s.rows,
        accepted: s.accepted,
        rejected: s.rejected,
        format: s.format,
      },
      rejected: d.rejected,
      tasks: d.tasks,
    };
  }
  const d = await loadDataset(path, {
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  const s = d.summary;
  return {
    summary: { kind, file: path, rows: s.rows, accepted: s.accepted, rejected: s.rejected, format: s.format },
    rejected: d.rejected,
    tasks: [],
    rows: d.tasks,
  };
}

/** One line for a rejected row or directory. */
export function formatIntakeError(kind: IntakeKind, e: RowError): string {
  if (kind !== "harbor") return formatRowError(e);
  return `${e.file}: ${e.id === undefined ? "" : `[${e.id}] `}${e.field}: ${e.reason}`;
}

/** The totals line of `tasks check` / `tasks import`. */
export function formatIntakeSummary(s: IntakeSummary): string {
  const what = s.kind === "harbor" ? `${s.rows} task dirs` : `${s.rows} rows`;
  const schema =
    s.kind === "harbor"
      ? "harbor"
      : `${s.format}, ${s.kind === "swebench" ? "SWE-bench" : "swe-agent"} schema`;
  return `${s.file} (${schema}): ${what}, ${s.accepted} accepted, ${s.rejected} rejected`;
}

/** One reason rejections share: how many, and the first few of them. */
export interface ReasonGroup {
  readonly reason: string;
  readonly count: number;
  readonly first: readonly RowError[];
}

/**
 * The kind of a rejection, for grouping: the field without its list index, and the reason with
 * quoted values, absolute paths and row numbers blanked (`FAIL_TO_PASS.3: 'x' is not …` → `FAIL_TO_PASS: '…' is not …`).
 * A quoted word that names a column (`name it in a 'language' column`) is advice, not a value: kept. Pure.
 */
export function reasonKey(e: RowError): string {
  const field = e.field.replace(/\.\d+$/, "");
  const reason = e.reason
    // a quote opens and closes outside a word: the apostrophe of "Harbor's" quotes nothing
    .replace(/(?<!\w)'([^']*)'(?!\w)/g, (q, inner: string) => (isColumnName(inner) ? q : "'…'"))
    .replace(/(^|\s)\/[^\s;,]+/g, "$1…")
    .replace(/\brow \d+/g, "row N")
    .replace(/\s+/g, " ")
    .slice(0, 160);
  return `${field}: ${reason}`;
}

/** Whether a quoted word is a column of the SWE-bench schema (or an alias intake reads). */
function isColumnName(word: string): boolean {
  return Object.hasOwn(SwebenchRow.shape, word) || Object.hasOwn(COLUMN_ALIASES, word);
}

/** Rejections grouped by {@link reasonKey}, most frequent first, keeping the first `keep` of each. Pure. */
export function groupByReason(rejected: readonly RowError[], keep = 3): ReasonGroup[] {
  const groups = new Map<string, RowError[]>();
  for (const e of rejected) {
    const k = reasonKey(e);
    const g = groups.get(k);
    if (g) g.push(e);
    else groups.set(k, [e]);
  }
  return [...groups]
    .map(([reason, es]) => ({ reason, count: es.length, first: es.slice(0, keep) }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

/**
 * The summary table of `tasks check`: one line per reason (count, reason), then its first rows. A
 * reason only one row has is shown whole (its values are that row's); a shared one as its kind. Pure.
 */
export function formatReasonTable(groups: readonly ReasonGroup[]): string[] {
  if (groups.length === 0) return [];
  const width = Math.max(5, ...groups.map((g) => String(g.count).length));
  const out = [`${"count".padStart(width)}  reason (first rows)`];
  for (const g of groups) {
    const only = g.count === 1 ? g.first[0] : undefined;
    const reason = only
      ? `${only.field.replace(/\.\d+$/, "")}: ${only.reason.replace(/\s+/g, " ")}`
      : g.reason;
    out.push(`${String(g.count).padStart(width)}  ${reason}`);
    const rows = g.first.map((e) => `row ${e.row}${e.id === undefined ? "" : ` [${e.id}]`}`);
    const more = g.count > g.first.length ? `, … ${g.count - g.first.length} more` : "";
    out.push(`${" ".repeat(width)}    ${rows.join(", ")}${more}`);
  }
  return out;
}
