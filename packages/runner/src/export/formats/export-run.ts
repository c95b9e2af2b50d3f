import { access, mkdir, readFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { match } from "ts-pattern";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { readTurnLog } from "../../gateway/turn-log.js";
import { replaceDirAtomic } from "../../run-format/dir-atomic.js";
import { writeFileAtomic } from "../../run-format/jsonl.js";
import { jsonlLinesOf } from "../../run-format/jsonl-lines.js";
import { readManifest, runPaths } from "../../run-format/run-dir.js";
import type { RunManifest, TrajectoryResult } from "../../run-format/schema.js";
import { groupKeyOf, sampleKeyOf, withoutRepeats } from "../repeated-lines.js";
import { readGroupRecords, readResultsReport, readServedTrajectory } from "../served-record.js";
import { type ChatTokenizer, loadChatTokenizer } from "../tokenizer.js";
import { atifTrajectory, atifVerifierResult } from "./atif.js";
import type { ExportNote } from "./credit.js";
import type { LengthCaps } from "./length-cap.js";
import { parquetTable } from "./parquet-table.js";
import { exportRecords, RecordFormat, type SegmentPolicy } from "./trainer-formats.js";

/**
 * `flakegym export`: a finished run directory (rollout's, or a serve group's `run/`) as trainer
 * files. atropos and samples are the run's own groups.jsonl / samples.jsonl; the record formats go
 * through the served-trajectory record (the one `serve` streams) and one mapping per format; atif
 * writes one Harbor ATIF trajectory per trajectory.
 */

export const ExportFormat = z
  .enum(["atropos", "samples", ...RecordFormat.options, "atif"])
  .describe("atropos | samples | verl | slime | skyrl | prime | trl | nemo | atif");
export type ExportFormat = z.infer<typeof ExportFormat>;

export const ExportFileFormat = z
  .enum(["jsonl", "parquet"])
  .describe(
    "jsonl: one JSON record per line; parquet: one table, a column per field (token ids, masks and logprobs as native list columns, nested objects as JSON)",
  );
export type ExportFileFormat = z.infer<typeof ExportFileFormat>;

export interface ExportRunOptions {
  readonly runDir: string;
  readonly format: ExportFormat;
  /** File (JSONL formats) or directory (atif). */
  readonly out: string;
  readonly segments: SegmentPolicy;
  /** How the records are written (default jsonl); atif is always one JSON file per trajectory. */
  readonly fileFormat?: ExportFileFormat;
  /** Overrides the run's --tokenizer (record formats need one). */
  readonly tokenizer?: string;
  /** The tokenizer already loaded (callers exporting several formats load it once). */
  readonly loaded?: ChatTokenizer;
  /** The trainer's length policy (record formats): prompt and response caps, cut as verl cuts. */
  readonly caps?: LengthCaps;
}

/** What an export wrote, and everything it did not train as it is (left out, a placeholder, cut), with why. */
export interface ExportResult {
  readonly path: string;
  readonly records: number;
  /** Trajectories whose record could not be built. */
  readonly excluded: ExcludedTrajectory[];
  readonly notes: ExportNote[];
}

const exists = (f: string) =>
  access(f).then(
    () => true,
    () => false,
  );

const jsonl = (rows: readonly unknown[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join("");

/** The bytes of `rows` in a file format. */
const encode = (rows: readonly Record<string, unknown>[], f: ExportFileFormat = "jsonl") =>
  f === "parquet" ? parquetTable(rows) : jsonl(rows);

/** The default output path: `<run>/export/<format>.<jsonl|parquet>` (atif: a directory). Pure. */
export const defaultExportPath = (runDir: string, format: ExportFormat, file: ExportFileFormat = "jsonl") =>
  join(runDir, "export", format === "atif" ? "atif" : `${format}.${file}`);

/** Entries of a run directory the run itself writes: an export must never write over one. */
const RUN_OWNED = new Set([
  "run.json",
  "groups.jsonl",
  "samples.jsonl",
  "metrics.jsonl",
  "summary.json",
  "atropos-sent.jsonl",
  "run.lock",
  "trajectories",
]);

/**
 * Why an export may not write to `out` (undefined: it may): the run directory itself, or one of the
 * run's own files or trajectories (`--out <run>/groups.jsonl` would replace the run's groups with
 * trainer records). Anything else under the run, such as the default `<run>/export/`, is fine. Pure.
 */
export function exportOutProblem(runDir: string, out: string): string | undefined {
  const rel = relative(runDir, out);
  if (rel === "") return `--out ${out} is the run directory itself`;
  if (rel.startsWith("..") || isAbsolute(rel)) return undefined;
  const top = rel.split(sep)[0]!;
  if (RUN_OWNED.has(top))
    return `--out ${out} is the run's own ${top}: the export would write over the run's data`;
  return undefined;
}

/**
 * Where `flakegym export` writes: `--out` when given — the file itself, or, when it names an
 * existing directory (and the format writes one file), that directory's `<format>.<file-format>` —
 * else {@link defaultExportPath}. atif writes a directory, so its `--out` is always the directory. Pure.
 */
export function exportOutPath(o: {
  runDir: string;
  format: ExportFormat;
  fileFormat: ExportFileFormat;
  out?: string;
  outIsDir: boolean;
}): string {
  if (o.out === undefined) return defaultExportPath(o.runDir, o.format, o.fileFormat);
  if (o.format === "atif" || !o.outIsDir) return o.out;
  return join(o.out, `${o.format}.${o.fileFormat}`);
}

/**
 * The records of a run: a serve group's run (`requests/<id>/run`) has them as it streamed them
 * (`requests/<id>/records`, its one token export); any other run, or a --tokenizer override,
 * builds them from the turn logs.
 */
async function recordsOf(o: ExportRunOptions, m: RunManifest) {
  const group = dirname(o.runDir);
  if (o.tokenizer === undefined && (await exists(join(group, "request.json")))) {
    const stored = await readGroupRecords(join(group, "records"));
    if (stored.length > 0) return { items: stored, excluded: [] as ExcludedTrajectory[] };
  }
  const dir = o.tokenizer ?? m.config.tokenizer;
  if (!dir && !o.loaded) {
    throw new UsageError(
      `${o.runDir} was run without --tokenizer (and is no serve group's run with streamed records), and --format ${o.format} needs token ids`,
      "pass --tokenizer <dir> (the policy model's tokenizer directory)",
    );
  }
  const tok = o.loaded ?? (await loadChatTokenizer(dir!));
  return await collectResults(o.runDir, (r) => readServedTrajectory(o.runDir, m, r, tok));
}

/** A trajectory left out of an export because its record could not be built, and why. */
export interface ExcludedTrajectory {
  readonly trajectory_id: string;
  readonly reason: string;
}

/**
 * Builds one item per trajectory; one that throws is left out with its reason, so one odd
 * trajectory never costs the export of the others.
 */
export async function collect<T>(
  results: readonly TrajectoryResult[],
  build: (r: TrajectoryResult) => Promise<T> | T,
): Promise<{ items: T[]; excluded: ExcludedTrajectory[] }> {
  const items: T[] = [];
  const excluded: ExcludedTrajectory[] = [];
  for (const r of results) {
    try {
      items.push(await build(r));
    } catch (err) {
      excluded.push({
        trajectory_id: r.trajectoryId,
        reason: err instanceof Error ? err.message : String(err),
      });
    }
  }
  return { items, excluded };
}

/**
 * The members groups.jsonl lines left out of their group (`group_overrides.excluded`), as notes.
 * A line that is not a group's is skipped. Pure.
 */
export function groupNotes(lines: readonly string[]): ExportNote[] {
  return lines.flatMap((l) => {
    try {
      const g = JSON.parse(l) as {
        group_overrides?: {
          task_id?: string;
          excluded?: { trajectory_id: string; reason: string; detail: string }[];
        };
      };
      return (g.group_overrides?.excluded ?? []).map(
        (x): ExportNote => ({
          trajectory_id: x.trajectory_id,
          task_id: g.group_overrides?.task_id ?? "?",
          reason:
            x.reason === "infra_error"
              ? "no_reward"
              : x.reason === "export_failed"
                ? "export_failed"
                : "no_sample",
          sampled_tokens: 0,
          handling: "left_out",
          detail: `${x.reason}: ${x.detail}`,
        }),
      );
    } catch {
      return [];
    }
  });
}

/** `collect` over a run's results; a result.json that does not read is left out, named, with the rest built. */
async function collectResults<T>(runDir: string, build: (r: TrajectoryResult) => Promise<T> | T) {
  const { results, unreadable } = await readResultsReport(runDir);
  const { items, excluded } = await collect(results, build);
  return { items, excluded: [...unreadable, ...excluded] };
}

/**
 * Writes the export; returns the file written, how many records it holds, and the trajectories left
 * out because their record could not be built (with why).
 */
export async function exportRun(o: ExportRunOptions): Promise<ExportResult> {
  const p = runPaths(o.runDir);
  if (!(await exists(p.manifest))) {
    throw new UsageError(
      `${o.runDir} is not a run directory (it has no run.json)`,
      "pass a directory written by `flakegym rollout`, or a serve group's requests/<id>/run",
    );
  }
  const problem = exportOutProblem(resolve(o.runDir), resolve(o.out));
  if (problem)
    throw new UsageError(
      problem,
      `pick another --out (the default is ${defaultExportPath(o.runDir, o.format)})`,
    );
  const m = await readManifest(p);
  const copy = async (file: string, keyOf: (r: Record<string, unknown>) => string | undefined) => {
    if (!(await exists(file)))
      throw new UsageError(`${file} does not exist`, "export a finished run directory");
    // a torn last line (a killed run) or an edited one is skipped and named, never copied as it is
    const read = jsonlLinesOf(
      await readFile(file, "utf8"),
      file,
      `run \`flakegym rollout --resume ${o.runDir}\` to write it whole, then export again`,
    );
    // one record delivered twice is exported once (the later line named)
    const { kept: lines, repeats } = withoutRepeats(read.lines, keyOf);
    const { skipped } = read;
    await mkdir(dirname(o.out), { recursive: true });
    const data =
      o.fileFormat === "parquet"
        ? parquetTable(lines.map((l) => JSON.parse(l) as Record<string, unknown>))
        : lines.map((l) => `${l}\n`).join("");
    await writeFileAtomic(o.out, data);
    const excluded = [
      ...skipped.map((x) => ({ trajectory_id: `${basename(file)} line ${x.line}`, reason: x.why })),
      ...repeats.map((x) => ({
        trajectory_id: `${basename(file)} record ${x.record}`,
        reason: `${file}: ${x.why}`,
      })),
    ];
    return { path: o.out, records: lines.length, excluded, notes: groupNotes(lines) };
  };
  return match(o.format)
    .with("atropos", () => copy(p.groups, groupKeyOf))
    .with("samples", () => copy(p.samples, sampleKeyOf))
    .with("atif", async () => {
      const { items, excluded } = await collectResults(o.runDir, async (r) => {
        const file = join(p.trajectory(r.trajectoryId).dir, "turns.jsonl");
        const turns = (await exists(file)) ? await readTurnLog(file) : [];
        return { id: r.trajectoryId, atif: atifTrajectory(m, r, turns), verifier: atifVerifierResult(r) };
      });
      // ATIF has no reward: Harbor keeps it in the verifier's result, written beside it
      const files = items.flatMap((x) => [
        [`${x.id}.json`, x.atif] as const,
        [`${x.id}.verifier.json`, x.verifier] as const,
      ]);
      await replaceDirAtomic(o.out, files, (n) => n.endsWith(".json"), "--out");
      return { path: o.out, records: items.length, excluded, notes: [] };
    })
    .with("verl", "slime", "skyrl", "prime", "trl", "nemo", async (f) => {
      const { items, excluded } = await recordsOf(o, m);
      const { records: rows, notes } = exportRecords(f, items, o.segments, { caps: o.caps ?? {} });
      await mkdir(dirname(o.out), { recursive: true });
      await writeFileAtomic(o.out, encode(rows as Record<string, unknown>[], o.fileFormat));
      return { path: o.out, records: rows.length, excluded, notes };
    })
    .exhaustive();
}
