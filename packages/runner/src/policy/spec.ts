import { match } from "ts-pattern";
import { z } from "zod";
import { UsageError } from "../errors.js";
import { formatSamplingQuery, parseSamplingQuery, SamplingParams } from "./sampling.js";
import { loadScriptedPlan } from "./scripted-plan.js";

/**
 * A policy spec names where a trajectory's model turns come from:
 *
 * - `openai:<base-url>#<model>` — any OpenAI-compatible server (vLLM, sglang, hosted);
 *   key from `OPENAI_API_KEY` when set. `?temperature=1&top_p=0.95&top_k=20&max_tokens=4096&seed=7`
 *   after the model sets sampling parameters (policy/sampling.ts), for anthropic too.
 * - `anthropic:<base-url>#<model>` — an Anthropic-compatible server; key from `ANTHROPIC_API_KEY`.
 * - `scripted:<file>` — replays assistant turns from a plan file (docs/reference/scripted-policy.md).
 * - `gold` — applies the task's reference patch through Cline's own edit tools.
 * - `empty` — completes at once without changing anything.
 */

const HttpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//i.test(u), "must start with http:// or https://");

export const PolicySpec = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("openai"),
      baseUrl: HttpUrl.describe("base URL ending where /chat/completions is appended (usually …/v1)"),
      model: z.string().min(1).describe("model id sent upstream"),
      sampling: SamplingParams.optional().describe("sampling parameters that override the client's"),
    })
    .strict(),
  z
    .object({
      kind: z.literal("anthropic"),
      baseUrl: HttpUrl.describe("base URL where /v1/messages is appended"),
      model: z.string().min(1).describe("model id sent upstream"),
      sampling: SamplingParams.optional().describe("sampling parameters that override the client's"),
    })
    .strict(),
  z
    .object({ kind: z.literal("scripted"), file: z.string().min(1).describe("path of the plan JSON") })
    .strict(),
  z.object({ kind: z.literal("gold") }).strict(),
  z.object({ kind: z.literal("empty") }).strict(),
]);
export type PolicySpec = z.infer<typeof PolicySpec>;

const FORMS = "openai:<base-url>#<model>, anthropic:<base-url>#<model>, scripted:<file>, gold, empty";

/** Parses a policy spec string; errors name the part that is wrong and the accepted forms. */
export function parsePolicySpec(spec: string): PolicySpec {
  const s = spec.trim();
  const fail = (what: string): never => {
    throw new UsageError(`policy spec '${spec}': ${what}`, `accepted forms: ${FORMS}`);
  };
  if (s === "gold" || s === "empty") return PolicySpec.parse({ kind: s });
  const colon = s.indexOf(":");
  if (colon <= 0) fail(`unknown policy '${s}'`);
  const kind = s.slice(0, colon);
  const rest = s.slice(colon + 1);
  let candidate: unknown;
  if (kind === "openai" || kind === "anthropic") {
    const hash = rest.indexOf("#");
    if (hash < 0) fail(`missing '#<model>' after the base URL`);
    const baseUrl = rest.slice(0, hash).replace(/\/+$/, "");
    const [model = "", query] = splitQuery(rest.slice(hash + 1));
    if (baseUrl.length === 0) fail("the base URL is empty");
    if (model.length === 0) fail("the model after '#' is empty");
    const sampling = query === undefined ? undefined : parseSamplingQuery(query, `policy spec '${spec}'`);
    candidate = { kind, baseUrl, model, ...(sampling ? { sampling } : {}) };
  } else if (kind === "scripted") {
    if (rest.length === 0) fail("the plan file after 'scripted:' is empty");
    candidate = { kind, file: rest };
  } else {
    fail(`unknown policy kind '${kind}'`);
  }
  const parsed = PolicySpec.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "spec";
    const value = (candidate as Record<string, unknown>)[String(issue.path[0])];
    fail(`${field} '${String(value)}' ${issue.message}`);
  }
  return parsed.data!;
}

/** The spec as a string again (for provenance); the inverse of {@link parsePolicySpec}. */
export function formatPolicySpec(spec: PolicySpec): string {
  return match(spec)
    .with({ kind: "openai" }, { kind: "anthropic" }, (s) => {
      const query = s.sampling ? formatSamplingQuery(s.sampling) : "";
      return `${s.kind}:${s.baseUrl}#${s.model}${query ? `?${query}` : ""}`;
    })
    .with({ kind: "scripted" }, (s) => `scripted:${s.file}`)
    .with({ kind: "gold" }, { kind: "empty" }, (s) => s.kind)
    .exhaustive();
}

/**
 * Checks a run's policies once, before anything runs: every spec parses (a model after `#` where
 * the kind needs one) and every scripted plan file is read and valid. Throws the first problem as
 * a usage error naming the spec, file and field; returns the parsed specs in order.
 */
export async function validatePolicySpecs(
  specs: readonly string[],
  signal?: AbortSignal,
): Promise<PolicySpec[]> {
  const parsed = specs.map(parsePolicySpec);
  const plans = new Set(parsed.flatMap((p) => (p.kind === "scripted" ? [p.file] : [])));
  for (const file of plans) await loadScriptedPlan(file, signal);
  return parsed;
}

/** `model?query` → [model, query]; the query is undefined without a `?`. Pure. */
function splitQuery(s: string): [string, string | undefined] {
  const q = s.indexOf("?");
  return q < 0 ? [s, undefined] : [s.slice(0, q), s.slice(q + 1)];
}

/**
 * A policy spec with run-wide sampling defaults (the rollout flags) folded in; the spec's own
 * parameters win. Scripted, gold and empty policies sample nothing and come back unchanged. Pure.
 */
export function withSamplingDefaults(policy: string, defaults: SamplingParams): string {
  const spec = parsePolicySpec(policy);
  if ((spec.kind !== "openai" && spec.kind !== "anthropic") || Object.keys(defaults).length === 0) {
    return policy;
  }
  return formatPolicySpec({ ...spec, sampling: { ...defaults, ...spec.sampling } });
}

/** The sampling parameters a policy spec sets (none for scripted, gold, empty). Pure. */
export function samplingOf(policy: string): SamplingParams | undefined {
  const spec = parsePolicySpec(policy);
  return spec.kind === "openai" || spec.kind === "anthropic" ? spec.sampling : undefined;
}
