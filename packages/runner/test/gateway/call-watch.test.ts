import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { WatchdogTimeout } from "../../src/gateway/call-decisions.js";
import { monotonicOf, stopReason, timerStallMs, watchCall } from "../../src/gateway/call-watch.js";

describe("watchCall: what ends a running call from outside, armed once its upstream request has left", () => {
  const entry = (silenceTimeoutMs = 60_000, totalTimeoutMs = 60_000) => {
    const ended = new AbortController();
    const limits = { maxConsecutiveFailures: 3, silenceTimeoutMs, totalTimeoutMs };
    return { ended, limits, deadlineMono: undefined as number | undefined };
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

  it("this process held up (the event loop blocked 1.5 s, as a SIGSTOP of the runner would) is nobody's time: neither watchdog fires for it; after it, silence still ends the call", async () => {
    expect(timerStallMs(100, 900)).toBe(0);
    expect(timerStallMs(100, 1600)).toBe(1500);
    const s = arm(entry(200, 400));
    const silence = aborted(s.ac);
    // block this thread well past both windows (no timer can run meanwhile)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
    await new Promise((r) => setTimeout(r, 20));
    expect(s.ac.signal.aborted).toBe(false);
    expect(await silence).toEqual(new WatchdogTimeout("silence", 200));
    s.watch.disarm();
  });

  it("the trajectory's deadline cuts a call still answering (events do not hold it off); the deadline is fixed on the monotonic clock", async () => {
    expect(monotonicOf(undefined, 1000, 5)).toBeUndefined();
    // a deadline 300 ms after an epoch instant read at monotonic 5: 305, whatever the wall clock does later
    expect(monotonicOf(1300, 1000, 5)).toBe(305);
    const e = { ...entry(60_000, 60_000), deadlineMono: performance.now() + 80 };
    const a = arm(e);
    const cut = aborted(a.ac);
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 20));
      a.watch.touch();
    }
    const reason = await cut;
    expect(reason).toBeInstanceOf(WatchdogTimeout);
    expect((reason as WatchdogTimeout).which).toBe("deadline");
    a.watch.disarm();
    // past already when armed: cut at once
    const late = arm({ ...entry(), deadlineMono: performance.now() - 1 });
    expect(((await aborted(late.ac)) as WatchdogTimeout).which).toBe("deadline");
    late.watch.disarm();
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
