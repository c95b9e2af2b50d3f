import { describe, expect, it } from "vitest";
import {
  callsOf,
  formatRecords,
  PRIME_ENV_NAME,
  piecesOf,
  rolloutIdOf,
  slimeStatus,
  temperatureOf,
} from "../../../src/export/formats/trainer-formats.js";
import type { ServedSegment, ServedTrajectory } from "../../../src/export/served-record.js";

/** The trainer mappings on hand-built records: a two-call segment and a trajectory split in two. */

const seg = (index: number, tokens: number[], mask: (0 | 1)[], reward: number | null): ServedSegment => ({
  index,
  tokens,
  loss_mask: mask,
  logprobs: mask.map((m, i) => (m ? -(i + 1) / 10 : 0)),
  reward,
  split: index === 0 ? null : { kind: "history_rewritten", at_call: 3, position: 2, detail: "condensed" },
  completion_source: "sampled",
});

const rec = (
  id: string,
  index: number,
  reward: number | null,
  segments: ServedSegment[],
): ServedTrajectory => ({
  type: "trajectory",
  run_id: "run",
  trajectory_id: id,
  task_id: "task",
  index,
  policy: "openai:x#m",
  outcome:
    index === 1
      ? { kind: "limits_exceeded", limit: "model_requests", detail: "" }
      : { kind: "completed", detail: "" },
  reward,
  reward_breakdown: null,
  timings_ms: { snapshot: 0, fork: 1, boot: 2, agent: 3000, score: 4, model: 1200 },
  turns: 3,
  infra_retries: 0,
  segments,
  skipped_calls: [],
  provenance: {},
  prompt: "fix it",
});

// prompt 10 11, call 1 = 20 21, tool result 12, call 2 = 22
const call = (seq: number, start: number, end: number, finish: string, tools = 0) => ({
  seq,
  start,
  end,
  text: `call ${seq}`,
  tool_calls: Array.from({ length: tools }, (_, k) => ({ id: `c${seq}${k}`, name: "run", arguments: "{}" })),
  finish_reason: finish,
  latency_ms: 600,
});
const one = rec("t0", 0, 1, [
  {
    ...seg(0, [10, 11, 20, 21, 12, 22], [0, 0, 1, 1, 0, 1], 1),
    calls: [call(1, 2, 4, "tool_calls", 1), call(2, 5, 6, "stop")],
  },
]);
// two segments: [30 | 40] then [31 32 | 41]
const two = rec("t1", 1, 0.5, [
  seg(0, [30, 40], [0, 1], 0.25),
  { ...seg(1, [31, 32, 41], [0, 0, 1], 0.25), calls: [call(3, 2, 3, "length")] },
]);
const infra = rec("t2", 2, null, []);

describe("trainer formats", () => {
  it("final keeps each trajectory's last segment; split keeps all; each carries the whole reward", () => {
    expect(
      piecesOf([one, two, infra], "final").map((p) => [p.record.trajectory_id, p.segment.index, p.reward]),
    ).toEqual([
      ["t0", 0, 1],
      ["t1", 1, 0.5],
    ]);
    expect(
      piecesOf([one, two, infra], "split").map((p) => [p.segment.index, p.reward, p.promptLength]),
    ).toEqual([
      [0, 1, 2],
      [0, 0.5, 1],
      [1, 0.5, 2],
    ]);
  });

  it("model calls are the runs of trained positions", () => {
    expect(callsOf(one.segments[0]!)).toEqual([
      { start: 2, end: 4 },
      { start: 5, end: 6 },
    ]);
  });

  it("slime status from the outcome", () => {
    expect(
      ["completed", "limits_exceeded", "timeout", "policy_error", "infra_error"].map((k) =>
        slimeStatus(k as never),
      ),
    ).toEqual(["completed", "truncated", "truncated", "failed", "aborted"]);
  });

  it("slime's rollout_id is a stable integer per trajectory; the temperature comes from the policy spec", () => {
    const id = rolloutIdOf(two);
    expect(Number.isSafeInteger(id)).toBe(true);
    expect(id).toBe(rolloutIdOf({ run_id: "run", trajectory_id: "t1" }));
    expect(id).not.toBe(rolloutIdOf(one));
    // int(sha256(b"run/t1").hexdigest()[:13], 16), as Python's hashlib computes it (the adapter's way)
    expect(id).toBe(3821850499519953);
    expect(temperatureOf({ policy: "openai:http://h/v1#m?temperature=0.7" })).toBe(0.7);
    expect(temperatureOf({ policy: "gold" })).toBe(1);
  });

  it("each format names the framework's fields and cuts prompt and response at the first sampled token", () => {
    const [verl] = formatRecords("verl", [one], "final") as Record<string, unknown>[];
    expect(verl).toMatchObject({
      prompt_ids: [10, 11],
      response_ids: [20, 21, 12, 22],
      response_mask: [1, 1, 0, 1],
      response_logprobs: [-0.3, -0.4, 0, -0.6],
      reward_score: 1,
      // verl counts the user turn, both assistant turns and the tool turn between them
      num_turns: 4,
      // seconds: 1.2 s waiting for the model, the rest of the agent's 3 s in tools
      metrics: { generate_sequences: 1.2, tool_calls: 1.8 },
    });
    const slime = formatRecords("slime", [two], "split") as Record<string, unknown>[];
    expect(slime.map((s) => [s["rollout_id"], s["response_length"], s["loss_mask"], s["status"]])).toEqual([
      [rolloutIdOf(two), 1, [1], "truncated"],
      [rolloutIdOf(two), 1, [1], "truncated"],
    ]);
    const [sky] = formatRecords("skyrl", [one, two, infra], "split") as Record<string, unknown[]>[];
    expect(sky!["trajectory_ids"]).toEqual([
      { instance_id: "task", repetition_id: 0 },
      { instance_id: "task", repetition_id: 1 },
      { instance_id: "task", repetition_id: 1 },
    ]);
    expect(sky!["is_last_step"]).toEqual([true, false, true]);
    expect(sky!["rewards"]).toEqual([1, 0.5, 0.5]);
    // finish reasons, not outcome kinds: t1's last call was cut by the length limit
    expect(sky!["stop_reasons"]).toEqual(["stop", "stop", "length"]);
    expect(sky!["rollout_metrics"]).toEqual({
      "flakegym/trajectories": 3,
      "flakegym/rows": 3,
      "flakegym/mean_reward": 0.75,
    });
    const [trl] = formatRecords("trl", [one], "final") as Record<string, unknown>[];
    expect(trl).toMatchObject({
      prompt_ids: [10, 11],
      completion_ids: [20, 21, 12, 22],
      env_mask: [1, 1, 0, 1],
    });
    const [nemo] = formatRecords("nemo", [one], "final") as {
      responses_create_params: unknown;
      response: { output: Record<string, unknown>[]; model: string };
      reward: number;
    }[];
    expect(nemo!.responses_create_params).toEqual({
      input: [{ role: "user", content: "fix it", type: "message" }],
    });
    expect(nemo!.reward).toBe(1);
    expect(nemo!.response.model).toBe("m");
    expect(
      nemo!.response.output.map((o) => [
        o["type"],
        o["prompt_token_ids"],
        o["generation_token_ids"],
        o["generation_log_probs"],
      ]),
    ).toEqual([
      ["message", [10, 11], [20, 21], [-0.3, -0.4]],
      ["function_call", undefined, undefined, undefined],
      ["message", [10, 11, 20, 21, 12], [22], [-0.6]],
    ]);
    expect(nemo!.response.output[0]!["content"]).toEqual([
      { type: "output_text", text: "call 1", annotations: [] },
    ]);
    const prime = formatRecords("prime", [one, two, infra], "final") as Record<string, unknown>[];
    // a TrainingSample and nothing else; advantages: reward − the group's mean (0.75) on sampled tokens
    expect(Object.keys(prime[0]!).sort()).toEqual(
      ["advantages", "env_name", "logprobs", "mask", "temperatures", "token_ids"].sort(),
    );
    expect(prime[0]).toMatchObject({
      token_ids: one.segments[0]!.tokens,
      mask: [false, false, true, true, false, true],
      temperatures: [1, 1, 1, 1, 1, 1],
      env_name: PRIME_ENV_NAME,
      advantages: [0, 0, 0.25, 0.25, 0, 0.25],
    });
    expect(prime[1]!["advantages"]).toEqual([0, 0, -0.25]);
  });
});
