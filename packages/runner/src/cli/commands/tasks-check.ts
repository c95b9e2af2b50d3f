import { z } from "zod";
import { formatRowError, loadDataset } from "../../tasks/dataset.js";
import { defineCommand } from "../command.js";

export const tasksCheckCommand = defineCommand({
  path: ["tasks", "check"],
  summary: "validate a dataset file (JSONL or Parquet) and list rejected rows",
  details:
    "Reads every row in the swe-agent-13k schema. Prints one line per rejected row (file, row, field, reason) and the totals; exits 1 when any row was rejected.",
  options: z.object({
    dataset: z.string().describe("dataset file (.jsonl or .parquet)"),
    json: z.boolean().default(false).describe("print the result as JSON"),
  }),
  examples: [
    "flakegym tasks check --dataset rows.jsonl",
    "flakegym tasks check --dataset train.parquet --json",
  ],
  async run(opts, ctx) {
    const progress = !opts.json && ctx.stderr.isTTY;
    const d = await loadDataset(opts.dataset, {
      signal: ctx.signal,
      ...(progress ? { onProgress: (n: number) => ctx.stderr.write(`\rread ${n} rows…`) } : {}),
    });
    if (progress) ctx.stderr.write("\r");
    if (opts.json) {
      ctx.stdout.write(`${JSON.stringify({ summary: d.summary, rejected: d.rejected }, null, 2)}\n`);
    } else {
      for (const e of d.rejected) ctx.stdout.write(`${formatRowError(e)}\n`);
      const s = d.summary;
      ctx.stdout.write(
        `${s.file} (${s.format}): ${s.rows} rows, ${s.accepted} accepted, ${s.rejected} rejected\n`,
      );
    }
    return d.rejected.length > 0 ? 1 : 0;
  },
});
