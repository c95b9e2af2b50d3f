import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { ProgressEvent } from "../../src/progress/events.js";
import { applyEvent, createReporter, emptyView, plainLine, renderView } from "../../src/progress/reporter.js";

const events: ProgressEvent[] = [
  { type: "task", taskId: "a", phase: "running" },
  { type: "trajectory", trajectoryId: "a-t0", taskId: "a", phase: "agent" },
  { type: "trajectory", trajectoryId: "a-t0", taskId: "a", phase: "agent", turns: 3 },
  { type: "trajectory", trajectoryId: "a-t1", taskId: "a", phase: "booting" },
  { type: "retry", trajectoryId: "a-t1", attempt: 1, detail: "worker crashed" },
  {
    type: "trajectory",
    trajectoryId: "a-t0",
    taskId: "a",
    phase: "done",
    outcome: "completed",
    reward: 1,
    turns: 4,
  },
];

describe("live view", () => {
  it("renders one line per task and per trajectory, with turns, retries and rewards", () => {
    const view = emptyView();
    events.forEach((e, i) => {
      applyEvent(view, e, i * 1000);
    });
    const lines = renderView(view, 10_000);
    expect(lines[0]).toBe("task a  running  1/2 done");
    expect(lines[1]).toMatch(/^ {2}a-t0\s+done\s+completed\s+turns 4\s+reward 1\.00$/);
    expect(lines[2]).toMatch(/^ {2}a-t1\s+booting\s+7\.0s\s+retries 1$/);
    expect(lines[3]).toBe("a-t1: infra failure, retry 1: worker crashed");
  });
});

describe("plain lines", () => {
  it("one line per state change; per-turn ticks are left to the live view", () => {
    expect(events.map(plainLine)).toEqual([
      "task a: running",
      "trajectory a-t0: agent",
      undefined,
      "trajectory a-t1: booting",
      "trajectory a-t1: infra failure, retry 1: worker crashed",
      "trajectory a-t0: done outcome=completed reward=1.00 turns=4",
    ]);
  });

  it("a non-TTY reporter writes plain lines; a TTY one redraws in place", () => {
    const plain = new PassThrough();
    let text = "";
    plain.on("data", (c) => (text += c));
    const r = createReporter(plain);
    for (const e of events) r.sink(e);
    r.close();
    expect(text.split("\n").filter(Boolean)).toHaveLength(5);

    const tty = Object.assign(new PassThrough(), { isTTY: true, columns: 80 });
    let out = "";
    tty.on("data", (c) => (out += c));
    const live = createReporter(tty);
    for (const e of events) live.sink(e);
    live.close();
    expect(out).toContain("\x1b[2Ktask a  running  1/2 done\n");
  });
});

describe("the warm pool's line", () => {
  it("shows idle and booting workers and how trajectories started, live only", () => {
    const view = emptyView();
    const e: ProgressEvent = { type: "pool", idle: 2, booting: 1, pooled: 5, cold: 1 };
    applyEvent(view, e, 0);
    expect(renderView(view, 0)).toEqual(["pool: 2 idle, 1 booting; 5 pooled, 1 cold"]);
    applyEvent(view, { type: "pool", idle: 0, booting: 0, pooled: 0, cold: 3, unavailable: "not root" }, 0);
    expect(renderView(view, 0)).toEqual(["pool: unavailable (not root); 0 pooled, 3 cold"]);
    expect(plainLine(e)).toBeUndefined();
  });
});
