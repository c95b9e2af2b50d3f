import { z } from "zod";
import { UsageError } from "../errors.js";
import { decodePercent } from "../text/percent-decode.js";

/**
 * Sampling parameters a policy sets for every model call of its trajectories, overriding what the
 * Cline core asks for (it always sends `temperature: 0`, which leaves a GRPO group with little
 * diversity). Given in a policy spec's query (`openai:<url>#<model>?temperature=1&top_p=0.95`) or by
 * the rollout flags `--temperature`, `--top-p`, `--top-k`, `--max-tokens`, `--seed` (a spec's own
 * value wins). Names are the OpenAI wire names; they are recorded as each group's
 * `generation_params`.
 */
export const SamplingParams = z
  .object({
    temperature: z.number().min(0).max(2).optional().describe("sampling temperature (0 = greedy)"),
    top_p: z.number().gt(0).max(1).optional().describe("nucleus sampling mass"),
    top_k: z.number().int().min(-1).optional().describe("sample among the k most likely tokens (-1: all)"),
    max_tokens: z.number().int().positive().optional().describe("tokens one model call may sample"),
    seed: z
      .number()
      .int()
      .optional()
      .describe("sampler seed; trajectory i of a group is sent seed + i so the group stays diverse"),
  })
  .strict();
export type SamplingParams = z.infer<typeof SamplingParams>;

/** The accepted query keys, in the order they are written back. */
export const SAMPLING_KEYS = ["temperature", "top_p", "top_k", "max_tokens", "seed"] as const;

/**
 * Parses `temperature=1&top_p=0.95` (the part after `?` in a policy spec). Pure; errors name the
 * key and the accepted ones.
 */
export function parseSamplingQuery(query: string, where: string): SamplingParams {
  const out: Record<string, number> = {};
  for (const part of query.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const key = decodePercent(eq < 0 ? part : part.slice(0, eq));
    const raw = eq < 0 ? "" : decodePercent(part.slice(eq + 1));
    if (key === undefined || raw === undefined)
      throw new UsageError(
        `${where}: '${part}' is not valid percent-encoding`,
        "write the value plainly, e.g. ?temperature=1",
      );
    if (!(SAMPLING_KEYS as readonly string[]).includes(key)) {
      throw new UsageError(
        `${where}: unknown sampling parameter '${key}'`,
        `accepted: ${SAMPLING_KEYS.join(", ")} (e.g. ?temperature=1&top_p=0.95)`,
      );
    }
    const value = raw.trim() === "" ? Number.NaN : Number(raw);
    if (!Number.isFinite(value)) throw new UsageError(`${where}: ${key}='${raw}' is not a number`);
    out[key] = value;
  }
  return checkSampling(out, where);
}

/** Validates sampling parameters; the error names the parameter and the allowed range. */
export function checkSampling(value: unknown, where: string): SamplingParams {
  const parsed = SamplingParams.safeParse(value);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UsageError(`${where}: sampling parameter ${i.path.join(".")}: ${i.message}`);
  }
  return parsed.data;
}

/** `temperature=1&top_p=0.95`, keys in {@link SAMPLING_KEYS} order; empty when none is set. Pure. */
export function formatSamplingQuery(p: SamplingParams): string {
  return SAMPLING_KEYS.filter((k) => p[k] !== undefined)
    .map((k) => `${k}=${p[k]}`)
    .join("&");
}

/** What trajectory `index` of a group is sent: the seed moves by the index. Pure. */
export function trajectorySampling(p: SamplingParams, index: number): SamplingParams {
  return p.seed === undefined ? p : { ...p, seed: p.seed + index };
}

/** The members an upstream sets in a request body (`undefined` removes a member). Pure. */
export function openAiSamplingMembers(p: SamplingParams): Record<string, unknown> {
  const set: Record<string, unknown> = { ...p };
  // one length limit: the policy's replaces both spellings the client may have sent
  if (p.max_tokens !== undefined) set["max_completion_tokens"] = undefined;
  return set;
}

/** The Anthropic Messages members (no seed there: it is not sent). Pure. */
export function anthropicSamplingMembers(p: SamplingParams): Record<string, unknown> {
  const { seed: _seed, ...rest } = p;
  return rest;
}
