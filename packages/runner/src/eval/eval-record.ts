import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { parseJsonFile } from "../run-format/json-file.js";
import { writeFileAtomic } from "../run-format/jsonl.js";
import { RunConfig } from "../run-format/schema.js";

/**
 * `eval.json`: what an eval was started with, written before its rollout starts, so
 * `eval --resume <dir>` runs the same eval again from what is on disk (the flags of the resuming
 * command other than --concurrency are not read).
 */
export const EVAL_RECORD_FILE = "eval.json";

export const EvalRecord = z
  .object({
    version: z.literal(1),
    evalId: z.string(),
    createdAt: z.string(),
    scenarioDirs: z.array(z.string()).describe("each scenario's directory (absolute)"),
    tasks: z.array(z.string()),
    catalog: z.string(),
    dataset: z.object({ file: z.string(), limit: z.number().int().optional() }).strict().optional(),
    config: RunConfig.describe("the rollout config before the eval's items and group size are set"),
    trials: z.number().int().min(1),
    keepWorkspaces: z.enum(["failed", "all", "none"]),
    prices: z.string().optional().describe("--prices file"),
    baseline: z.string().optional().describe("--baseline file"),
  })
  .strict();
export type EvalRecord = z.infer<typeof EvalRecord>;

export const writeEvalRecord = (dir: string, r: EvalRecord) =>
  writeFileAtomic(join(dir, EVAL_RECORD_FILE), `${JSON.stringify(EvalRecord.parse(r), null, 2)}\n`);

/** The record of the eval in `dir`; an unreadable or edited one names the file and what to do. */
export async function readEvalRecord(dir: string): Promise<EvalRecord> {
  const file = join(dir, EVAL_RECORD_FILE);
  const next = "--resume takes a directory an eval wrote (it holds eval.json); or start a new eval";
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    throw new FlakegymError("E_RESUME", `${file} cannot be read`, { cause, hint: next });
  }
  const parsed = EvalRecord.safeParse(parseJsonFile(text, file, next));
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new FlakegymError("E_RESUME", `${file}: field '${i.path.join(".")}': ${i.message}`, { hint: next });
  }
  return parsed.data;
}
