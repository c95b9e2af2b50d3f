import { describe, expect, it } from "vitest";
import {
  answeredCallOf,
  callFailure,
  failureCounts,
  refusalOf,
  responseIdOf,
  roundMs,
  turnRecordOf,
  WatchdogTimeout,
} from "../../src/gateway/call-decisions.js";
import { parseClientRequest } from "../../src/gateway/client-request.js";
import type { TrajectoryLimits } from "../../src/gateway/types.js";
import { UpstreamError } from "../../src/policy/upstream.js";
import { runSecrets } from "../../src/redact/redactor.js";

const limits: TrajectoryLimits = {
  silenceTimeoutMs: 1,
  totalTimeoutMs: 1,
  maxResponseBytes: 1,
  maxConsecutiveFailures: 3,
};

describe("refusalOf: whether a model call is refused before it is forwarded", () => {
  it("forwards a call within its budgets, and any call when no budget is set", () => {
    expect(
      refusalOf({ id: "t", limits, terminal: undefined, completionTokens: 10_000 }, 500),
    ).toBeUndefined();
    const budgets = { ...limits, maxRequests: 3, maxCompletionTokens: 100 };
    expect(
      refusalOf({ id: "t", limits: budgets, terminal: undefined, completionTokens: 99 }, 3),
    ).toBeUndefined();
  });

  it("refuses the call after maxRequests, naming the budget it spent", () => {
    const r = refusalOf(
      { id: "t", limits: { ...limits, maxRequests: 3 }, terminal: undefined, completionTokens: 0 },
      4,
    );
    expect(r).toEqual({
      message: "trajectory 't' exceeded maxRequests=3 (call 4 refused)",
      limit: "model_requests",
    });
  });

  it("refuses once the sampled tokens reach maxCompletionTokens", () => {
    const r = refusalOf(
      {
        id: "t",
        limits: { ...limits, maxCompletionTokens: 100 },
        terminal: undefined,
        completionTokens: 100,
      },
      2,
    );
    expect(r).toEqual({
      message: "trajectory 't' spent its maxCompletionTokens=100 (100 sampled; call 2 refused)",
      limit: "completion_tokens",
    });
  });

  it("refuses every call of an ended trajectory without naming a budget (it is not ended again), before any budget", () => {
    const terminal = { kind: "timeout" as const, message: "upstream silent", at: "2026-01-01T00:00:00.000Z" };
    const r = refusalOf({ id: "t", limits: { ...limits, maxRequests: 1 }, terminal, completionTokens: 0 }, 9);
    expect(r).toEqual({
      message: "trajectory 't' was ended by the gateway (timeout: upstream silent)",
      limit: undefined,
    });
  });
});

describe("failureCounts: a trajectory's failure counters after one failed call", () => {
  it("an abort counts nothing, a watchdog counts as failed only, an upstream failure also in a row", () => {
    const before = { failed: 2, consecutiveFailures: 1 };
    expect(failureCounts(false, before)).toEqual({ failed: 2, consecutiveFailures: 1 });
    expect(failureCounts("failed", before)).toEqual({ failed: 3, consecutiveFailures: 1 });
    expect(failureCounts("in_a_row", before)).toEqual({ failed: 3, consecutiveFailures: 2 });
  });
});

describe("turnRecordOf and responseIdOf: what a turn line and an answer's id say", () => {
  const body = Buffer.from(
    JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }),
  );
  const client = parseClientRequest("openai", body);
  const call = {
    trajectoryId: "t-7",
    seq: 3,
    startedAt: new Date("2026-01-02T03:04:05.678Z"),
    protocol: "openai" as const,
    upstream: "openai:http://h/v1#m",
    client,
    totalMs: 12.5,
  };

  it("records the call, the stream flag the client asked for, and no first byte unless given", () => {
    expect(turnRecordOf(call, "refused", { error: "no" })).toEqual({
      v: 1,
      trajectoryId: "t-7",
      seq: 3,
      startedAt: "2026-01-02T03:04:05.678Z",
      protocol: "openai",
      stream: true,
      upstream: "openai:http://h/v1#m",
      status: "refused",
      request: client.request,
      latency: { firstByteMs: null, totalMs: 12.5 },
      error: "no",
    });
    const ok = turnRecordOf(call, "ok", { latency: { firstByteMs: 1.25, totalMs: 20 } });
    expect(ok.latency).toEqual({ firstByteMs: 1.25, totalMs: 20 });
    const plain = parseClientRequest(
      "openai",
      Buffer.from(JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] })),
    );
    expect(turnRecordOf({ ...call, client: plain }, "ok", {}).stream).toBe(false);
  });

  it("names answers as each protocol does, and rounds latencies to two decimals", () => {
    expect(responseIdOf("openai", "t-7", 3)).toBe("chatcmpl-t-7-3");
    expect(responseIdOf("anthropic", "t-7", 3)).toBe("msg-t-7-3");
    expect(roundMs(1.23456)).toBe(1.23);
    expect(roundMs(0.005)).toBe(0.01);
  });
});

const e = {
  id: "t-1",
  limits: { maxConsecutiveFailures: 3, silenceTimeoutMs: 1, totalTimeoutMs: 1, maxResponseBytes: 1 },
};

describe("callFailure: how a failed model call is counted, logged, answered and whether it ends the trajectory", () => {
  it("a watchdog ends the trajectory as timeout at once (504), counted as failed but not in a row", () => {
    const f = callFailure(new WatchdogTimeout("silence", 500), true, e, 4);
    expect(f).toMatchObject({ turn: "timeout", httpStatus: 504, type: "timeout_error", counts: "failed" });
    expect(f.message).toBe(
      "trajectory 't-1' call 4: upstream sent no event for 500 ms (silenceTimeoutMs; bytes that never complete an event do not count)",
    );
    expect(f.ends?.(0)).toEqual({ kind: "timeout", message: f.message });
  });

  it("an upstream error keeps its status, is the policy's, and ends the trajectory after N in a row", () => {
    const f = callFailure(new UpstreamError("vllm answered HTTP 500: boom", 500), false, e, 2);
    expect(f).toMatchObject({
      turn: "upstream_error",
      httpStatus: 500,
      type: "upstream_error",
      counts: "in_a_row",
    });
    expect(f.ends?.(2)).toBeUndefined();
    expect(f.ends?.(3)).toEqual({
      kind: "policy_error",
      message: "3 upstream failures in a row; last: trajectory 't-1' call 2: vllm answered HTTP 500: boom",
    });
    expect(callFailure(new UpstreamError("odd", 200), false, e, 1).httpStatus).toBe(502);
  });

  it("a terminal upstream error (a scripted plan that ran out) ends the trajectory on the first one", () => {
    const f = callFailure(new UpstreamError("plan ran out", 500, { terminal: true }), false, e, 7);
    expect(f.ends?.(1)).toEqual({ kind: "policy_error", message: "trajectory 't-1' call 7: plan ran out" });
  });

  it("an abort is answered 503 and not counted; a fault of the gateway's own counts like an upstream failure", () => {
    const aborted = callFailure(new Error("client closed the connection"), true, e, 3);
    expect(aborted).toMatchObject({ turn: "aborted", httpStatus: 503, counts: false });
    expect(aborted.message).toBe("call 3 aborted: client closed the connection");
    expect(aborted.ends).toBeUndefined();
    const fault = callFailure(new TypeError("x is undefined"), false, e, 5);
    expect(fault).toMatchObject({ turn: "upstream_error", httpStatus: 502, counts: "in_a_row" });
    expect(fault.message).toBe("trajectory 't-1' call 5: gateway fault: x is undefined");
    expect(fault.ends?.(3)?.kind).toBe("policy_error");
  });
});

describe("answeredCallOf (the last call the model server answered, for the trajectory's status)", () => {
  it("takes a call the server answered, and keeps the one before for a refused or aborted call", () => {
    const ok = answeredCallOf("ok", undefined, undefined);
    expect(ok).toEqual({ status: "ok" });
    const failed = answeredCallOf("upstream_error", "HTTP 500: boom", ok);
    expect(failed).toEqual({ status: "upstream_error", error: "HTTP 500: boom" });
    expect(answeredCallOf("refused", "budget spent", failed)).toBe(failed);
    expect(answeredCallOf("aborted", "cut", failed)).toBe(failed);
    expect(answeredCallOf("timeout", "silence", failed)).toEqual({ status: "timeout", error: "silence" });
  });

  it("redacts the run's secrets from the error, as the turn line is", () => {
    runSecrets.add("sk-answered-secret-123456");
    expect(
      answeredCallOf("upstream_error", "key sk-answered-secret-123456 refused", undefined)?.error,
    ).not.toContain("sk-answered-secret-123456");
  });
});
