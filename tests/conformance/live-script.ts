/**
 * What the live model server does with each member's calls in `npm run conformance`'s live Cline
 * rollout (live-rollout.ts). Pure decisions: the server in front of vLLM (live-shaper.ts) applies them.
 *
 * A random-weight model cannot solve a task, so two members are given a scripted policy: vLLM samples
 * every token itself, under a regex (vLLM's `structured_outputs`) that spells the edit or the
 * completion Cline must see. The token ids and logprobs are still vLLM's, sampled live.
 *
 * The member is told by the `seed` the gateway sends (rollout `--seed S`: trajectory i is sent S + i).
 */
import { match } from "ts-pattern";

/** The rollout's `--seed`; trajectory i sends LIVE_SEED + i. */
export const LIVE_SEED = 4400;

/** The members of the live group, by trajectory index (run.ts MEMBERS uses the same indices). */
export const LIVE_MEMBERS = { truncated: 0, zero: 1, one: 2, infra: 3, turn1: 4 } as const;
export type LiveMember = keyof typeof LIVE_MEMBERS;

/** Tokens an unconstrained call of the reward-0 member may sample (the policy's `max_tokens`). */
export const SHORT_CALL_TOKENS = 32;
/** Tokens a scripted call may take (the regex decides; a random model may spell it char by char). */
const SCRIPTED_CALL_TOKENS = 1000;

/**
 * The context window Cline is told, for a first prompt of `promptTokens`: Cline truncates once a
 * call's prompt + completion reaches 80 % of it (its rule below 200 000), so the threshold is set
 * 1 700 tokens above the first prompt — above what the reward-0 and reward-1 members ever use
 * (measured: three short calls reach the first prompt + 1 116, the scripted edit + 181), below what
 * the truncated member's three file reads bring into its context (READS).
 */
export function contextWindowFor(promptTokens: number): number {
  return Math.ceil((promptTokens + 1700) / 0.8);
}

/**
 * The truncated member's first calls: Cline reads these files (their text enters its context as
 * tool results, not as sampled tokens; a random model samples slowly on a loaded CPU, ~7 tokens/s).
 */
export const READS = ["src/range.js", "src/version.js", "test/semver.test.mjs"] as const;

/** The edit that fixes semver-lite-caret-zero (its solution.patch, as one Cline replace_in_file). */
const EDIT = [
  "<replace_in_file>",
  "<path>src/range.js</path>",
  "<diff>",
  "------- SEARCH",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the JavaScript source the edit is about
  '    { op: "<", version: parse(`${v.major + 1}.0.0`) },',
  "=======",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the JavaScript source the edit is about
  '    { op: "<", version: parse(v.major > 0 ? `${v.major + 1}.0.0` : v.minor > 0 ? `0.${v.minor + 1}.0` : `0.0.${v.patch + 1}`) },',
  "+++++++ REPLACE",
  "</diff>",
  "</replace_in_file>",
].join("\n");

const DONE = [
  "<attempt_completion>",
  "<result>",
  "Caret ranges on 0.x versions now stay within the minor (or the patch for 0.0.x).",
  "</result>",
  "</attempt_completion>",
].join("\n");

/** A regex that matches exactly `text` (its metacharacters escaped, newlines as `\n`). Pure. */
export function literalRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&").replace(/\n/g, "\\n");
}

/** What the server does with one call. */
export type Shape =
  | { readonly kind: "refuse"; readonly status: number; readonly message: string }
  | { readonly kind: "sample"; readonly body: Readonly<Record<string, unknown>> };

const scripted = (text: string): Shape => ({
  kind: "sample",
  body: { structured_outputs: { regex: literalRegex(text) }, max_tokens: SCRIPTED_CALL_TOKENS },
});

/** The member a call's seed names, or undefined (not a seed of this run). Pure. */
export function memberOfSeed(seed: unknown): LiveMember | undefined {
  if (typeof seed !== "number") return undefined;
  return (Object.keys(LIVE_MEMBERS) as LiveMember[]).find((m) => LIVE_MEMBERS[m] === seed - LIVE_SEED);
}

/** What the server does with `member`'s call number `call` (1-based). Pure. */
export function shapeOf(member: LiveMember | undefined, call: number): Shape {
  return match(member)
    .with(undefined, () => ({
      kind: "refuse" as const,
      status: 400,
      message: "conformance server: a call without a seed of this run (run the rollout with --seed)",
    }))
    .with("truncated", () => {
      const read = READS[call - 1];
      if (read) return scripted(`<read_file>\n<path>${read}</path>\n</read_file>`);
      return scripted(call === READS.length + 1 ? EDIT : DONE);
    })
    .with("one", () => scripted(call === 1 ? EDIT : DONE))
    .with("zero", () => ({ kind: "sample" as const, body: { max_tokens: SHORT_CALL_TOKENS } }))
    .with("turn1", "infra", () => ({
      kind: "refuse" as const,
      status: 400,
      message: "conformance server: this member's calls are refused (the turn-1 error)",
    }))
    .exhaustive();
}
