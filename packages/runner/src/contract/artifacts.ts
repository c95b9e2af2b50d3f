import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { isInsideRelative, readTargetFile } from "./safe-read.js";

/**
 * The JSON artifacts stage scripts write into `$FLAKEGYM_OUT` (inside the sandbox). They come from
 * code flakegym does not trust: read with size caps, no symlinks, and validated here.
 */

export const ARTIFACT_FILES = {
  runtimeEnv: "runtime_env.json",
  rollout: "rollout.json",
  metrics: "metrics.json",
  hintsUsed: "hints_used.json",
} as const;
export const MAX_ARTIFACT_BYTES = 1024 * 1024;
export const MAX_SAMPLES_BYTES = 64 * 1024 * 1024;

export const RuntimeEnv = z
  .object({
    ok: z.boolean().describe("the runtime is ready"),
    detail: z.string().max(4096).optional().describe("what was prepared, or why it failed"),
  })
  .strict();
export type RuntimeEnv = z.infer<typeof RuntimeEnv>;

export const RolloutArtifact = z
  .object({
    ok: z.boolean().describe("the rollout stage ran to its end"),
    paths: z
      .object({
        samples_jsonl: z
          .string()
          .refine(isInsideRelative, "must be a relative path inside the output dir (no .., no leading /)")
          .describe("JSONL of {prompt, completion, reward}, relative to the output dir"),
      })
      .strict(),
  })
  .strict();
export type RolloutArtifact = z.infer<typeof RolloutArtifact>;

export const Sample = z
  .object({
    prompt: z.string().describe("what the policy was asked"),
    completion: z.string().describe("what it answered"),
    reward: z.number().finite().describe("the sample's reward"),
  })
  .strict();
export type Sample = z.infer<typeof Sample>;

export const Metrics = z
  .object({
    ok: z.boolean().describe("the evaluation ran"),
    score: z.number().min(0).max(1).nullable().describe("0..1, or null to let flakegym compute it"),
  })
  .strict();
export type Metrics = z.infer<typeof Metrics>;

export const HintsUsed = z
  .object({
    ok: z.boolean().describe("at least one official command ran"),
    used_anchors: z.array(z.string()).describe("where the commands came from (file:line)"),
    commands: z.array(z.string()).describe("the commands run"),
    reason: z.string().describe("why these (or why none)"),
  })
  .strict();
export type HintsUsed = z.infer<typeof HintsUsed>;

/** Parses one artifact's text (pure); errors name the file, the field and the fix. */
export function parseArtifact<T>(schema: z.ZodType<T>, file: string, text: string): T {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw artifactError(file, "", `not valid JSON (${(err as Error).message})`);
  }
  const r = schema.safeParse(data);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw artifactError(file, i.path.join("."), i.message);
  }
  return r.data;
}

/** Parses samples JSONL (pure); an error names the line and field. Blank lines are skipped. */
export function parseSamples(text: string, file: string): Sample[] {
  const out: Sample[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    out.push(parseArtifact(Sample, `${file}:${i + 1}`, line));
  }
  return out;
}

export async function readArtifact<T>(
  outDir: string,
  file: string,
  schema: z.ZodType<T>,
  maxBytes = MAX_ARTIFACT_BYTES,
): Promise<T | undefined> {
  const text = await readTargetFile(outDir, file, maxBytes);
  return text === undefined ? undefined : parseArtifact(schema, file, text);
}

function artifactError(file: string, field: string, message: string): FlakegymError {
  return new FlakegymError("E_ARTIFACT", `${file}: ${field || "(top level)"}: ${message}`, {
    hint: "the stage script must write it as described in docs/reference/api.md ('Artifacts')",
  });
}
