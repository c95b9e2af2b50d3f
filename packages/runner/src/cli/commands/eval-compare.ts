import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { type CompareRow, compareEvals, pageCompare } from "../../view/compare.js";
import { ReportHead } from "../../view/eval-data.js";
import { defineCommand } from "../command.js";

const pct = (x: number | null | undefined) =>
  x === null || x === undefined ? "–" : `${Math.round(x * 100)}%`;
const side = (s: CompareRow["a"]) => (s ? `${s.c}/${s.n} ${pct(s.pass1)}` : "–");

/** The comparison as a plain-text table, regressions first (the same rows the viewer's page shows). Pure. */
export function compareText(rows: readonly CompareRow[], pairing: string): string {
  const { counts } = pageCompare(rows, 0, rows.length);
  const head = ["change", "item × policy", "A pass@1", "B pass@1", "Δ", "pass@k A → B"];
  const body = rows.map((r) => [
    r.change,
    r.key,
    side(r.a),
    side(r.b),
    r.delta === null ? "–" : `${r.delta > 0 ? "+" : ""}${pct(r.delta)}`,
    r.k === null ? "–" : `k=${r.k}: ${pct(r.a?.passK)} → ${pct(r.b?.passK)}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const summary = Object.entries(counts)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  return [`matched by: ${pairing}`, `changes: ${summary || "none"}`, "", line(head), ...body.map(line)].join(
    "\n",
  );
}

async function readReport(dir: string, what: string): Promise<ReportHead> {
  const file = join(dir, "report.json");
  const text = await readFile(file, "utf8").catch((cause: Error) => {
    throw new UsageError(
      `${what}: cannot read ${file} (${cause.message})`,
      "give an eval dir (evals/<id>), the dir `flakegym eval` wrote report.json into",
    );
  });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new UsageError(
      `${what}: ${file} is not JSON (${String(cause)})`,
      "is the eval still being written?",
    );
  }
  const p = ReportHead.safeParse(json);
  if (!p.success)
    throw new UsageError(`${what}: ${file} is not an eval report (${p.error.issues[0]?.message})`);
  return p.data;
}

export const evalCompareCommand = defineCommand({
  path: ["eval", "compare"],
  summary: "compare two evals item by item: pass@1 and pass@k deltas, regressions and fixes first",
  details:
    "Reads <a>/report.json and <to>/report.json and prints one row per (item, policy): each side's\n" +
    "passed/scored and pass@1, the change B − A, and unbiased pass@k at the largest k both sides have.\n" +
    "Rows match on the same item and policy; when each eval has exactly one policy and they differ\n" +
    "(model A against model B), item by item. The viewer shows the same table (docs/reference/view.md).",
  positional: "a",
  options: z.object({
    a: z.string().min(1).describe("eval dir A (the before)"),
    to: z.string().min(1).describe("eval dir B (the after)"),
    json: z.boolean().default(false).describe("print the rows as JSON"),
  }),
  examples: ["flakegym eval compare evals/before --to evals/after"],
  async run(opts, ctx) {
    const a = await readReport(resolve(ctx.cwd, opts.a), "<a>");
    const b = await readReport(resolve(ctx.cwd, opts.to), "--to");
    const { rows, pairing } = compareEvals(a, b);
    ctx.stdout.write(
      opts.json ? `${JSON.stringify({ pairing, rows }, null, 2)}\n` : `${compareText(rows, pairing)}\n`,
    );
    return 0;
  },
});
