import { describe, expect, it } from "vitest";
import { AskPolicy, decideAsk } from "../src/ask-policy.js";
import { CLINE_ASKS } from "../src/messages.js";

const policy = AskPolicy.parse({});
const ctx = { apiFailures: 0 };

describe("decideAsk", () => {
  it("approves tools and commands ourselves, never answers command_output", () => {
    expect(decideAsk("tool", "{}", policy, ctx)).toEqual({ action: "approve" });
    expect(decideAsk("command", "ls", policy, ctx)).toEqual({ action: "approve" });
    expect(decideAsk("command_output", "", policy, ctx)).toEqual({ action: "ignore" });
  });

  it("denies what the policy does not allow", () => {
    const strict = AskPolicy.parse({ approveCommands: false, approveTools: false });
    expect(decideAsk("command", "rm -rf /", strict, ctx)).toEqual({ action: "deny" });
    expect(decideAsk("tool", "{}", strict, ctx)).toEqual({ action: "deny" });
    expect(decideAsk("browser_action_launch", "", policy, ctx)).toEqual({ action: "deny" });
    expect(decideAsk("use_mcp_server", "", policy, ctx)).toEqual({ action: "deny" });
    expect(decideAsk("new_task", "", policy, ctx)).toEqual({ action: "deny" });
  });

  it("answers follow-up questions with the configured text", () => {
    const p = AskPolicy.parse({ followupReply: "carry on" });
    expect(decideAsk("followup", "which one?", p, ctx)).toEqual({ action: "reply", text: "carry on" });
    expect(decideAsk("plan_mode_respond", "", p, ctx)).toEqual({ action: "reply", text: "carry on" });
  });

  it("completion_result ends as completed with the completion text", () => {
    expect(decideAsk("completion_result", "", policy, { apiFailures: 0, completionText: "done!" })).toEqual({
      action: "end",
      outcome: { kind: "completed", detail: "the agent attempted completion", result: "done!" },
    });
    expect(decideAsk("completion_result", "", policy, ctx)).toEqual({
      action: "end",
      outcome: { kind: "completed", detail: "the agent attempted completion" },
    });
  });

  it("retries api_req_failed up to maxApiRetries, then ends as policy_error (answering no)", () => {
    const p = AskPolicy.parse({ maxApiRetries: 2 });
    const err = JSON.stringify({ message: "500 upstream exploded", status: 500 });
    expect(decideAsk("api_req_failed", err, p, { apiFailures: 1 })).toEqual({ action: "retry" });
    expect(decideAsk("api_req_failed", err, p, { apiFailures: 2 })).toEqual({ action: "retry" });
    expect(decideAsk("api_req_failed", err, p, { apiFailures: 3 })).toEqual({
      action: "end",
      answer: "deny",
      outcome: {
        kind: "policy_error",
        detail:
          "the policy request failed 3 time(s) after Cline's own retries (last error: 500 upstream exploded)",
      },
    });
    const none = AskPolicy.parse({ maxApiRetries: 0 });
    expect(decideAsk("api_req_failed", "plain text error\nmore", none, { apiFailures: 1 })).toMatchObject({
      outcome: { kind: "policy_error", detail: expect.stringContaining("last error: plain text error)") },
    });
  });

  it("ends as agent_error on mistake_limit_reached, resume_task and unknown asks", () => {
    expect(decideAsk("mistake_limit_reached", "too many mistakes", policy, ctx)).toMatchObject({
      action: "end",
      outcome: { kind: "agent_error", ask: "mistake_limit_reached" },
    });
    expect(decideAsk("resume_task", "", policy, ctx)).toMatchObject({ outcome: { kind: "agent_error" } });
    expect(decideAsk("resume_completed_task", "", policy, ctx)).toMatchObject({
      outcome: { kind: "agent_error" },
    });
    expect(decideAsk("unknown", "??", policy, ctx)).toMatchObject({
      outcome: { kind: "agent_error", ask: "unknown" },
    });
  });

  it("has a decision for every ask the pinned core knows", () => {
    for (const ask of CLINE_ASKS)
      expect(decideAsk(ask, "", policy, ctx).action).toMatch(/^(approve|deny|reply|retry|ignore|end)$/);
  });

  it("rejects unknown policy fields", () => {
    expect(() => AskPolicy.parse({ yolo: true })).toThrow();
  });
});
