import { resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { unguardedEvalCmdNote, unguardedIdsNote } from "../../scoring/decoys/twin.js";
import { PythonFlags, pythonOptionsOfFlags } from "../../snapshots/python-options.js";
import { pythonJsonOf, rowPythonLine, rowPythonsOf, withPythonRefusals } from "../../snapshots/row-python.js";
import { detectDatasetFormat } from "../../tasks/dataset.js";
import { withDatasetPath } from "../../tasks/hf-dataset.js";
import {
  formatIntakeError,
  formatIntakeSummary,
  formatReasonTable,
  groupByReason,
  loadIntake,
} from "../../tasks/intake.js";
import { rowRewardReport } from "../../tasks/row-reward.js";
import type { IntakeTask } from "../../tasks/swebench.js";
import { fileLooksBinary, printable } from "../../text/looks-binary.js";
import { defineCommand } from "../command.js";

export const tasksCheckCommand = defineCommand({
  path: ["tasks", "check"],
  summary: "validate a dataset file (JSONL or Parquet) or Harbor task dirs and list what is rejected",
  details:
    "Reads every row of a dataset file — swe-agent-13k schema, or the SWE-bench family (told by an\n" +
    "`instance_id` in the first row) — or every Harbor task directory under a directory. Prints one\n" +
    "line per rejected row or directory (where, field or file, reason), the notes on accepted rows\n" +
    "(e.g. junk test ids dropped; an eval_cmd task whose hidden tests have no assertion a decoy twin\n" +
    "can change), a table of the rejections by reason (count, first rows) and the\n" +
    "totals; exits 1 when any was rejected. swe-agent rows have no hidden tests: each accepted row is\n" +
    "listed with what `rollout --dataset` will score it by (its profile's build and lint commands, or\n" +
    "--build-cmd / --lint-cmd, and --judge).",
  options: z.object({
    dataset: z
      .string()
      .describe(
        "dataset file (.jsonl or .parquet), directory of Harbor task dirs or hf:<org>/<name>[@revision][:split] (a Hugging Face dataset from the hub's local cache, docs/reference/tasks.md)",
      ),
    json: z.boolean().default(false).describe("print the result as JSON"),
    repoMirror: z
      .string()
      .optional()
      .describe("directory of local git mirrors: a row's `owner/repo` is read from DIR/owner/repo"),
    buildCmd: z
      .string()
      .optional()
      .describe("swe-agent rows: the build command rollout will be given (else each profile's)"),
    lintCmd: z
      .string()
      .optional()
      .describe("swe-agent rows: the lint command rollout will be given (else each profile's)"),
    judge: z
      .string()
      .optional()
      .describe("swe-agent rows: the LLM judge rollout will be given (<base-url>#<model>)"),
    ...PythonFlags,
  }),
  examples: [
    "flakegym tasks check --dataset rows.jsonl",
    "flakegym tasks check --dataset swe-bench-verified.parquet --json",
    "flakegym tasks check --dataset ./harbor-tasks",
    "flakegym tasks check --dataset hf:princeton-nlp/SWE-bench_Verified",
  ],
  async run(opts0, ctx) {
    const opts = await withDatasetPath(opts0, ctx);
    await refuseBinaryJsonl(opts.dataset);
    const progress = !opts.json && ctx.stderr.isTTY;
    const d = await loadIntake(opts.dataset, {
      signal: ctx.signal,
      ...(progress ? { onProgress: (n: number) => ctx.stderr.write(`\rread ${n} rows…`) } : {}),
      ...(opts.repoMirror === undefined ? {} : { repoMirror: resolve(ctx.cwd, opts.repoMirror) }),
    });
    // a python row is buildable here only with the interpreter it wants (or an allowed mismatch)
    const pythons = await rowPythonsOf(d.tasks, pythonOptionsOfFlags(opts), ctx.env);
    const { rejected, summary, refusedRows } = withPythonRefusals(d, pythons);
    const groups = groupByReason(rejected);
    const scoring = rowRewardReport(d.rows ?? [], {
      buildCmd: opts.buildCmd,
      lintCmd: opts.lintCmd,
      judge: opts.judge !== undefined,
    });
    const notes = d.tasks
      .filter((t) => !refusedRows.has(t.source.row))
      .flatMap((t) =>
        [...(t.notes ?? []), ...guardNotes(t)].map((note) => ({ row: t.source.row, id: t.spec.id, note })),
      );
    if (progress) ctx.stderr.write("\r");
    if (opts.json) {
      const byReason = groups.map((g) => ({
        reason: g.reason,
        count: g.count,
        rows: g.first.map((e) => e.row),
      }));
      ctx.stdout.write(
        `${JSON.stringify({ summary, rejected, byReason, notes, pythons: pythons.map(pythonJsonOf), ...(d.rows ? { scoring } : {}) }, null, 2)}\n`,
      );
    } else {
      for (const e of rejected) ctx.stdout.write(`${printable(formatIntakeError(d.summary.kind, e))}\n`);
      for (const r of pythons) ctx.stdout.write(`${printable(rowPythonLine(r))}\n`);
      for (const n of notes) ctx.stdout.write(`${printable(`note: row ${n.row} [${n.id}]: ${n.note}`)}\n`);
      for (const r of scoring)
        ctx.stdout.write(`${printable(`scored by: row ${r.row} [${r.id}] (${r.profile}): ${r.text}`)}\n`);
      if (scoring.length > 0 && opts.judge === undefined) {
        ctx.stdout.write(
          "note: build and lint alone give 1 to an unchanged repository that builds; --judge <base-url>#<model> also scores whether the task was done\n",
        );
      }
      for (const line of formatReasonTable(groups)) ctx.stdout.write(`${printable(line)}\n`);
      ctx.stdout.write(`${formatIntakeSummary(summary)}\n`);
    }
    return rejected.length > 0 ? 1 : 0;
  },
});

/** Whether an accepted eval_cmd or per-id task's verdicts have a decoy twin (scoring/decoys/twin.ts); [] when they have. */
function guardNotes(t: IntakeTask): string[] {
  const run = t.spec.tests.run;
  const patch = t.spec.tests.patch === undefined ? undefined : t.files[t.spec.tests.patch];
  if (run.kind === "ids" && patch !== undefined) {
    const note = unguardedIdsNote(patch.toString(), [...run.failToPass, ...run.passToPass]);
    return note ? [note] : [];
  }
  const dir = t.spec.tests.dir;
  if (t.spec.tests.run.kind !== "eval_cmd" || dir === undefined) return [];
  const prefix = `${dir}/`;
  const hidden = Object.fromEntries(
    Object.entries(t.files)
      .filter(([p]) => p.startsWith(prefix))
      .map(([p, c]) => [p.slice(prefix.length), c]),
  );
  const note = unguardedEvalCmdNote(hidden);
  return note ? [note] : [];
}

/** A file that is neither Parquet nor text is refused up front instead of printed row by row. */
async function refuseBinaryJsonl(file: string): Promise<void> {
  let binary: boolean;
  try {
    binary = (await detectDatasetFormat(file)) === "jsonl" && (await fileLooksBinary(file));
  } catch {
    return; // unreadable or a directory: loadIntake says why
  }
  if (binary) {
    throw new UsageError(
      `--dataset ${file} is a binary file, neither JSONL text nor Parquet (no 'PAR1' magic)`,
      "pass a .jsonl file (one JSON object per line) or a .parquet file",
    );
  }
}
