import { describe, expect, it } from "vitest";
import { callFailure, WatchdogTimeout } from "../../src/gateway/serve-call.js";
import { UpstreamError } from "../../src/policy/upstream.js";

const e = { id: "t-1", limits: { maxConsecutiveFailures: 3, silenceTimeoutMs: 1, totalTimeoutMs: 1 } };

describe("callFailure: how a failed model call is counted, logged, answered and whether it ends the trajectory", () => {
  it("a watchdog ends the trajectory as timeout at once (504), counted as failed but not in a row", () => {
    const f = callFailure(new WatchdogTimeout("silence", 500), true, e, 4);
    expect(f).toMatchObject({ turn: "timeout", httpStatus: 504, type: "timeout_error", counts: "failed" });
    expect(f.message).toBe("trajectory 't-1' call 4: upstream sent nothing for 500 ms (silenceTimeoutMs)");
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
