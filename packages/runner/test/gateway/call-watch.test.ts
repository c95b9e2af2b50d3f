import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { callFailure, WatchdogTimeout } from "../../src/gateway/call-decisions.js";
import { stopReason, watchCall } from "../../src/gateway/serve-call.js";
import { UpstreamError } from "../../src/policy/upstream.js";

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

describe("watchCall: what ends a running call from outside, armed once its upstream request has left", () => {
  const entry = (silenceTimeoutMs = 60_000, totalTimeoutMs = 60_000) => {
    const ended = new AbortController();
    return { ended, limits: { maxConsecutiveFailures: 3, silenceTimeoutMs, totalTimeoutMs } };
  };
  const response = () => new ServerResponse(new IncomingMessage(new Socket()));
  const arm = (e: ReturnType<typeof entry>, res = response(), signal?: AbortSignal) => {
    const ac = new AbortController();
    const ctx = { maxBody: 1, signal, endTrajectory: () => undefined };
    const watch = watchCall(ctx, e as never, res, ac);
    return { ac, watch, res };
  };
  const aborted = (ac: AbortController) =>
    new Promise<unknown>((resolve) => ac.signal.addEventListener("abort", () => resolve(ac.signal.reason)));

  it("what happened before it was armed counts: a client that left, an ended trajectory, a closing gateway", () => {
    const gone = response();
    gone.destroy();
    const a = arm(entry(), gone);
    expect((a.ac.signal.reason as Error).message).toBe("client closed the connection");
    a.watch.disarm();

    const e = entry();
    e.ended.abort({ kind: "timeout", message: "ended" });
    const b = arm(e);
    expect(b.ac.signal.reason).toEqual({ kind: "timeout", message: "ended" });
    b.watch.disarm();

    const closing = new AbortController();
    closing.abort();
    const c = arm(entry(), response(), closing.signal);
    expect((c.ac.signal.reason as Error).message).toBe("gateway closing");
    c.watch.disarm();
    expect(stopReason({ signal: undefined }, entry())).toBeUndefined();
  });

  it("and what happens after: the client leaving, the trajectory ending", async () => {
    const a = arm(entry());
    const reason = aborted(a.ac);
    a.res.emit("close");
    expect(((await reason) as Error).message).toBe("client closed the connection");
    a.watch.disarm();
    const e = entry();
    const b = arm(e);
    e.ended.abort("unregistered");
    expect(b.ac.signal.reason).toBe("unregistered");
    b.watch.disarm();
  });

  it("the silence watchdog is held off by events and fires after a silence; the total one fires regardless", async () => {
    const s = arm(entry(80, 60_000));
    const silence = aborted(s.ac);
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 40));
      s.watch.touch();
    }
    expect(s.ac.signal.aborted).toBe(false);
    expect(await silence).toEqual(new WatchdogTimeout("silence", 80));
    s.watch.disarm();
    const t = arm(entry(60_000, 50));
    expect(await aborted(t.ac)).toEqual(new WatchdogTimeout("total", 50));
    t.watch.disarm();
  });

  it("disarmed, nothing fires any more", async () => {
    const e = entry(20, 30);
    const a = arm(e);
    a.watch.disarm();
    a.res.emit("close");
    e.ended.abort("late");
    await new Promise((r) => setTimeout(r, 60));
    expect(a.ac.signal.aborted).toBe(false);
  });
});
