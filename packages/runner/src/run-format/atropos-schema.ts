import { z } from "zod";

/** `-100`: the mask value of a position that is not trained (Atropos, and every trainer export). */
export const MASKED = -100;

/**
 * The Atropos wire types (NousResearch/atropos `atroposlib/api/server.py` and
 * `atroposlib/envs/base.py`): what the run-api accepts and answers.
 */

/** One chat message as Atropos stores it: `role` and `content` are required, the rest passes through. */
export const AtroposMessage = z
  .object({
    role: z.string().describe("system | user | assistant | tool"),
    content: z.unknown().describe("message text or content blocks"),
  })
  .catchall(z.unknown());
export type AtroposMessage = z.infer<typeof AtroposMessage>;

/**
 * A scored group: one entry per trajectory in every per-sequence list. The run-api requires
 * `tokens`, `masks` and `scores`; `masks` hold -100 for untrained positions and the token id for
 * trained ones; `inference_logprobs` align with `tokens` (1.0 at prompt positions).
 */
export const ScoredDataGroup = z
  .object({
    tokens: z.array(z.array(z.number().int())).describe("token ids of each sequence"),
    masks: z.array(z.array(z.number().int())).describe("-100 = not trained; else the token id"),
    scores: z.array(z.number()).describe("one reward per sequence"),
    advantages: z.array(z.array(z.number())).nullish().describe("per-token advantages (unused here)"),
    ref_logprobs: z.array(z.array(z.number())).nullish().describe("reference-model logprobs (unused here)"),
    messages: z.array(z.array(AtroposMessage)).nullish().describe("the chat of each sequence"),
    generation_params: z.record(z.string(), z.unknown()).nullish().describe("sampling parameters"),
    inference_logprobs: z
      .array(z.array(z.number()))
      .nullish()
      .describe("sampler logprobs aligned with tokens (1.0 at prompt positions)"),
    overrides: z.array(z.record(z.string(), z.unknown())).nullish().describe("one dict per sequence"),
    group_overrides: z.record(z.string(), z.unknown()).nullish().describe("one dict for the group"),
    images: z.unknown().optional().describe("images (unused here)"),
    env_id: z.number().int().nullish().describe("the env id the run-api assigned at registration"),
  })
  .strict();
export type ScoredDataGroup = z.infer<typeof ScoredDataGroup>;

/** `POST /register-env` body. */
export const RegisterEnvRequest = z
  .object({
    max_token_length: z.number().int(),
    desired_name: z.string(),
    weight: z.number(),
    group_size: z.number().int().positive(),
    min_batch_allocation: z.number().min(0).max(1).nullish(),
  })
  .strict();
export type RegisterEnvRequest = z.infer<typeof RegisterEnvRequest>;

/** `POST /register-env` answer: either "wait for trainer to start" or a registration. */
export const RegisterEnvResponse = z.union([
  z.object({ status: z.literal("success"), env_id: z.number().int() }).loose(),
  z.object({ status: z.string() }).loose(),
]);
export type RegisterEnvResponse = z.infer<typeof RegisterEnvResponse>;

/** `GET /info`: -1 means the trainer has not said yet. */
export const InfoResponse = z
  .object({ batch_size: z.number().int(), max_token_len: z.number().int() })
  .loose();
export type InfoResponse = z.infer<typeof InfoResponse>;

/** `GET /status-env` (JSON body `{env_id}`). */
export const StatusEnvResponse = z
  .object({
    current_step: z.number().int(),
    queue_size: z.number().int(),
    self_queue_size: z.number().int().optional(),
    max_group_size: z.number().int().optional(),
    env_weight: z.number().optional(),
  })
  .loose();
export type StatusEnvResponse = z.infer<typeof StatusEnvResponse>;
