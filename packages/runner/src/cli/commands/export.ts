import { stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { type ExportNote, type NoteReason, noteLine } from "../../export/formats/credit.js";
import { ExportFileFormat, ExportFormat, exportOutPath, exportRun } from "../../export/formats/export-run.js";
import { SegmentPolicy } from "../../export/formats/trainer-formats.js";
import { checkOutDir } from "../../rollout/out-path.js";
import { defineCommand } from "../command.js";

export const exportCommand = defineCommand({
  path: ["export"],
  summary:
    "write a finished run as trainer files (verl, slime, SkyRL, prime-rl, TRL, NeMo Gym, Atropos, ATIF)",
  details:
    "Reads a run directory (of `flakegym rollout`, or a `flakegym serve` group's run/) and writes one JSONL\n" +
    "record per trajectory (SkyRL: one GeneratorOutput batch per task) in the framework's field names, the\n" +
    "same records the Python adapters build from `flakegym serve` (docs/reference/trainers.md). atropos and samples\n" +
    "are the run's groups.jsonl and samples.jsonl; atif writes one Harbor ATIF trajectory per file.\n" +
    "--file-format parquet writes the same records as one Parquet table (lists as native list columns).",
  positional: "run",
  options: z.object({
    run: z.string().describe("the run directory"),
    format: ExportFormat,
    out: z
      .string()
      .optional()
      .describe(
        "output file, or an existing directory to write <format>.<file-format> into (atif: directory) (default <run>/export/<format>.jsonl)",
      ),
    segments: SegmentPolicy.default("split"),
    maxPromptTokens: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "the trainer's prompt length (verl: rollout.prompt_length): a longer prompt keeps its last N tokens, as verl's agent loops cut (counted and reported)",
      ),
    maxResponseTokens: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "the trainer's response length (verl: rollout.response_length): a longer response keeps its first N tokens, as verl's agent loops cut (counted and reported)",
      ),
    fileFormat: ExportFileFormat.default("jsonl"),
    tokenizer: z
      .string()
      .optional()
      .describe("tokenizer directory, instead of the run's --tokenizer (record formats need token ids)"),
  }),
  examples: [
    "flakegym export runs/20261121T093000Z-1a2b3c --format verl",
    "flakegym export runs/20261121T093000Z-1a2b3c --format slime --segments final --out slime.jsonl",
    "flakegym export runs/20261121T093000Z-1a2b3c --format verl --max-prompt-tokens 8192 --max-response-tokens 2048",
    "flakegym export runs/20261121T093000Z-1a2b3c --format atif",
    "flakegym export runs/20261121T093000Z-1a2b3c --format verl --file-format parquet",
  ],
  async run(opts, ctx) {
    const runDir = resolve(ctx.cwd, opts.run);
    if (opts.format === "atif" && opts.fileFormat === "parquet") {
      throw new UsageError(
        "--format atif writes Harbor ATIF JSON files, not Parquet",
        "drop --file-format parquet for atif, or pick a record format (verl, slime, skyrl, prime, trl, nemo, samples, atropos)",
      );
    }
    const given = opts.out === undefined ? undefined : resolve(ctx.cwd, opts.out);
    const outIsDir =
      given !== undefined && (await stat(given).catch(() => undefined))?.isDirectory() === true;
    const out = exportOutPath({
      runDir,
      format: opts.format,
      fileFormat: opts.fileFormat,
      ...(given !== undefined ? { out: given } : {}),
      outIsDir,
    });
    // rollout's output-path checks, before anything is read: never a hang under /proc, never a
    // bare ENOTDIR (atif writes a directory; the other formats a file in one)
    await checkOutDir("--out", opts.format === "atif" ? out : dirname(out), ctx.cwd);
    const r = await exportRun({
      runDir,
      format: opts.format,
      out,
      segments: opts.segments,
      fileFormat: opts.fileFormat,
      caps: {
        ...(opts.maxPromptTokens !== undefined ? { maxPromptTokens: opts.maxPromptTokens } : {}),
        ...(opts.maxResponseTokens !== undefined ? { maxResponseTokens: opts.maxResponseTokens } : {}),
      },
      ...(opts.tokenizer ? { tokenizer: resolve(ctx.cwd, opts.tokenizer) } : {}),
    });
    ctx.stdout.write(`${r.records} ${opts.format} record(s) → ${r.path}\n`);
    // a trajectory whose record could not be built is left out, the rest written: say which and why
    for (const x of r.excluded)
      ctx.stderr.write(`left out ${x.trajectory_id}: its record could not be built: ${x.reason}\n`);
    // members and sampled tokens the records do not train as they are: say which, how and why
    for (const n of r.notes) ctx.stderr.write(`${noteLine(n)}\n`);
    const untrained = r.notes.reduce((k, n) => k + n.sampled_tokens, 0);
    if (r.notes.length > 0)
      ctx.stderr.write(`${r.notes.length} note(s); ${untrained} sampled token(s) not trained\n`);
    const none = emptyExportLine(opts.format, r.records, r.excluded.length, r.notes);
    if (none === undefined) return 0;
    ctx.stderr.write(`${none}\n`);
    return 1;
  },
});

/** Reasons a format cannot train a record without: what the user can do about each. */
const REMEDY: Partial<Record<NoteReason, string>> = {
  no_logprobs:
    "this format needs the sampled tokens' logprobs: roll out against an endpoint that returns them (docs/reference/trainers.md), or export --format verl|skyrl|trl|samples",
  no_reward: "no member has a reward: look at the run's results (flakegym view) and rerun with --resume",
  no_sample: "no member sampled a token: check the policy endpoint (flakegym doctor) and rerun",
};

/**
 * The error line of an export that wrote no record (undefined when it wrote some): how many
 * trajectories were left out, by reason, and what to do. An empty export exits 1. Pure.
 */
export function emptyExportLine(
  format: string,
  records: number,
  failed: number,
  notes: readonly Pick<ExportNote, "trajectory_id" | "reason" | "handling">[],
): string | undefined {
  if (records > 0) return undefined;
  const byReason = new Map<NoteReason, Set<string>>();
  for (const n of notes) {
    if (n.handling !== "left_out") continue;
    byReason.set(n.reason, (byReason.get(n.reason) ?? new Set()).add(n.trajectory_id));
  }
  const counted = [...byReason]
    .map(([reason, ids]) => [reason, ids.size] as const)
    .sort((a, b) => b[1] - a[1]);
  const parts = counted.map(([reason, k]) => `${k} ${k === 1 ? "trajectory" : "trajectories"} ${reason}`);
  if (failed > 0) parts.push(`${failed} whose record could not be built`);
  const why = parts.length > 0 ? `left out: ${parts.join(", ")}` : "the run has no finished trajectory";
  const top = counted[0]?.[0];
  const next = (top && REMEDY[top]) ?? "see the lines above for each trajectory";
  return `wrote no ${format} record (${why}); ${next}`;
}
