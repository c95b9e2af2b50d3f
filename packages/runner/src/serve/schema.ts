import { z } from "zod";
import { ScenarioSpec } from "../eval/scenario.js";
import { ServedTrajectory } from "../export/served-record.js";

/**
 * The `flakegym serve` HTTP API (docs/reference/trainers.md). A trainer POSTs a GroupRequest to /v1/groups
 * and reads NDJSON StreamLines back; GET /v1/schema returns these schemas as JSON Schema.
 */

export const RequestId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/)
  .describe("the trainer's id of this group: resubmitting it never runs the group again");

/** Rows one request may carry. */
export const MAX_ROWS = 64;

/**
 * A scenario sent in the request: scenario.json's fields without the ones naming files (a trainer
 * cannot name files on the server), so its workspace starts empty and it has no reference solution.
 */
export const InlineScenario = ScenarioSpec.omit({ template: true, hidden: true, solution: true }).describe(
  "an eval scenario (docs/reference/eval.md) without template, hidden or solution: an empty workspace, checks run by the scorer",
);

export const GroupRequest = z
  .object({
    request_id: RequestId,
    task: z
      .string()
      .min(1)
      .optional()
      .describe(
        "what the group runs, one of task | rows | scenario: a catalog task id (`flakegym tasks list`)",
      ),
    rows: z
      .array(z.unknown())
      .min(1)
      .max(MAX_ROWS)
      .optional()
      .describe(
        "instead of `task`: SWE-bench-style dataset rows (the shape `rollout --dataset` and `tasks import` accept: instance_id, repo, base_commit, problem_statement, patch, test_patch, FAIL_TO_PASS, …); each row is a task run group_size times, rewarded by its hidden tests",
      ),
    scenario: z
      .union([z.string().min(1), InlineScenario])
      .optional()
      .describe("instead of `task`: an eval scenario, a built-in scenario id or an inline one"),
    group_size: z.number().int().min(1).max(64).describe("trajectories per task (per row)"),
    inference: z
      .object({
        base_url: z
          .string()
          .regex(/^https?:\/\//)
          .describe(
            "the trainer's OpenAI-compatible endpoint, ending in /v1 (e.g. its vLLM or sglang router)",
          ),
        model: z.string().min(1).describe("model name the endpoint serves"),
      })
      .strict()
      .optional()
      .describe(
        "the policy: the trainer's own inference server (vLLM-style token ids and logprobs are requested)",
      ),
    policy: z
      .enum(["gold", "empty"])
      .optional()
      .describe(
        "instead of `inference`: gold (the task's reference solution) or empty (no change), to validate the setup; a trainer cannot name files on the server",
      ),
    sampling: z
      .object({
        temperature: z.number().min(0).max(2).optional(),
        top_p: z.number().gt(0).max(1).optional(),
        top_k: z.number().int().min(-1).optional(),
        max_tokens: z.number().int().positive().optional(),
        seed: z.number().int().optional().describe("trajectory i of the group samples with seed + i"),
      })
      .strict()
      .optional()
      .describe("sampling parameters sent with every model call"),
    max_turns: z.number().int().min(1).optional().describe("model calls allowed per trajectory"),
    timeout_s: z.number().int().min(1).optional().describe("seconds one trajectory may take"),
  })
  .strict()
  .refine((r) => (r.inference === undefined) !== (r.policy === undefined), {
    message: "give exactly one of `inference` (the trainer's endpoint) or `policy`",
    path: ["inference"],
  })
  .refine((r) => [r.task, r.rows, r.scenario].filter((x) => x !== undefined).length === 1, {
    message: "give exactly one of `task` (a catalog task id), `rows` (dataset rows) or `scenario`",
    path: ["task"],
  });
export type GroupRequest = z.infer<typeof GroupRequest>;

export const GroupStatus = z
  .enum(["running", "complete", "cancelled", "failed"])
  .describe(
    "complete: every trajectory finished and has its record; cancelled: DELETEd; failed: the group could not run, or trajectories are missing (resubmitting resumes it and retries the missing records)",
  );
export type GroupStatus = z.infer<typeof GroupStatus>;

export const AcceptedLine = z
  .object({
    type: z.literal("accepted"),
    request_id: z.string(),
    run_id: z.string(),
    status: GroupStatus,
    replayed: z
      .number()
      .int()
      .describe("trajectories (and trajectory errors) that finished before this stream began (sent next)"),
  })
  .strict();

export const TrajectoryErrorLine = z
  .object({
    type: z.literal("trajectory_error"),
    run_id: z.string(),
    trajectory_id: z.string(),
    task_id: z.string(),
    index: z.number().int().nonnegative().describe("position in the group"),
    reason: z.string().describe("why the trajectory's record (its token export) could not be built"),
  })
  .strict()
  .describe(
    "a trajectory that finished but whose record could not be built: it is left out, the rest of the group streams on, and the group does not end complete",
  );
export type TrajectoryErrorLine = z.infer<typeof TrajectoryErrorLine>;

export const DoneLine = z
  .object({
    type: z.literal("done"),
    request_id: z.string(),
    status: GroupStatus,
    trajectories: z.number().int().describe("trajectory records streamed"),
    expected: z.number().int().optional().describe("trajectories the group runs (tasks × group_size)"),
    excluded: z
      .array(z.object({ trajectory_id: z.string(), reason: z.string() }).strict())
      .optional()
      .describe("finished trajectories without a record (their trajectory_error lines), with why"),
    detail: z.string().optional().describe("why a group failed or was cancelled"),
  })
  .strict();
export type DoneLine = z.infer<typeof DoneLine>;

export const HeartbeatLine = z
  .object({ type: z.literal("heartbeat"), at: z.string() })
  .strict()
  .describe(
    "sent every 15 s while nothing else is: a trainer that hears nothing for longer may assume the server is gone",
  );

export const StreamLine = z
  .discriminatedUnion("type", [AcceptedLine, ServedTrajectory, TrajectoryErrorLine, DoneLine, HeartbeatLine])
  .describe("one NDJSON line of a group's stream");
export type StreamLine = z.infer<typeof StreamLine>;

export const RowProblem = z
  .object({
    row: z.number().int().describe("1-based position in `rows`"),
    field: z.string().describe("the column that is wrong, or (row)"),
    reason: z.string(),
    id: z.string().optional().describe("the row's instance_id when it had one"),
  })
  .strict();
export type RowProblem = z.infer<typeof RowProblem>;

export const ApiError = z
  .object({
    error: z
      .object({
        code: z.string(),
        message: z.string(),
        rows: z.array(RowProblem).optional().describe("E_ROWS: every rejected row (nothing was started)"),
      })
      .strict(),
  })
  .strict();

/** The machine-readable API description served at GET /v1/schema. */
export function apiSchema() {
  return {
    version: 1,
    endpoints: {
      "POST /v1/groups":
        "body GroupRequest → 200 NDJSON StreamLine…; 429 + Retry-After when full; 409 when the id names another request",
      "GET /v1/groups/{request_id}":
        "the group's stream again (finished trajectories first), 404 when unknown",
      "DELETE /v1/groups/{request_id}":
        "cancels a running group → 202; its stream ends with status cancelled",
      "GET /v1/schema": "this document",
      "GET /healthz": "200 {ok, running, capacity}",
    },
    auth: "Authorization: Bearer <token> on every route when the server has a token (required off loopback)",
    schemas: {
      GroupRequest: z.toJSONSchema(GroupRequest, { io: "input", unrepresentable: "any" }),
      StreamLine: z.toJSONSchema(StreamLine, { unrepresentable: "any" }),
      ApiError: z.toJSONSchema(ApiError),
    },
  };
}
