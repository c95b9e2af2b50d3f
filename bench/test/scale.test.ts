import { describe, expect, it } from "vitest";
import { threadRunClock } from "../../packages/runner/src/gateway/thread-run-clock.js";
import { percentile } from "../lib.js";
import { frameMessage, splitFrames } from "../scale/grpc-frames.js";
import {
  caveats,
  judge,
  marginal,
  overlapLine,
  type PointResult,
  peakOverlap,
  perTrajectory,
  ratio,
  summaryLine,
  TARGETS,
} from "../scale/judge.js";
import { ownDelayMs, schedRunMs, startOwnLoopMonitor } from "../scale/own-loop.js";
import { logPosition, plotSeries, plotSvg } from "../scale/plot.js";
import {
  chatRequest,
  chatRequestBody,
  SYSTEM_PROMPT_BYTES,
  sseDelta,
  stateJson,
  TOOL_RESULT_BYTES,
} from "../scale/sim-script.js";

function point(over: Partial<PointResult> = {}): PointResult {
  return {
    n: 10,
    finished: 10,
    completed: 10,
    lost: 0,
    failures: [],
    outcomes: { completed: 10 },
    wallS: 20,
    runnerCpuMs: 1000,
    mainCpuMs: 600,
    threadCpu: { mainMs: 600, topOthersMs: [300, 50], othersMs: 400 },
    rssBaseMb: 200,
    rssPeakMb: 210,
    gatewayAddedP50Ms: 1,
    gatewayAddedP99Ms: 4,
    gatewayRunP50Ms: 1,
    gatewayRunP99Ms: 3,
    gatewayEndToEndP99Ms: 9,
    loopP99Ms: 40,
    loopOwnP99Ms: 12,
    idleLoopP99Ms: 2,
    firstCallP50Ms: 500,
    firstCallP99Ms: 900,
    peakInLoop: 10,
    loadMin: 3,
    loadMax: 5,
    fdsBase: 40,
    fdsPeak: 80,
    nomadCalls: 120,
    modelCalls: 50,
    ...over,
  };
}

describe("percentile (the bench's nearest-rank percentile)", () => {
  it("takes the nearest rank, and NaN of nothing", () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted on purpose
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });
});

describe("per-trajectory costs and ratios", () => {
  it("divides the runner's CPU, its RSS above idle, Nomad calls and fds by N", () => {
    expect(perTrajectory(point())).toEqual({ cpuMs: 100, rssMb: 1, nomadCalls: 12, fds: 4 });
    // RSS that fell below the idle runner's (a GC in between) counts 0, not negative
    expect(perTrajectory(point({ rssPeakMb: 150 })).rssMb).toBe(0);
  });

  it("takes the marginal cost between two points (the slope, fixed costs cancelled)", () => {
    const a = point({ n: 10, runnerCpuMs: 3000, rssPeakMb: 210 }); // 2 s fixed + 100 ms/traj
    const b = point({ n: 100, runnerCpuMs: 12_000, rssPeakMb: 300 });
    expect(marginal(a, b)).toEqual({ cpuMs: 100, rssMb: 1 });
    expect(marginal(b, a).cpuMs).toBeNaN();
  });

  it("gives NaN, never Infinity, against a zero or missing base", () => {
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(3, 0)).toBeNaN();
    expect(ratio(3, undefined)).toBeNaN();
  });
});

describe("peakOverlap (trajectories in their agent loop at once)", () => {
  it("counts the most intervals open at one instant; one ending where another starts does not overlap it", () => {
    expect(peakOverlap([])).toBe(0);
    expect(
      peakOverlap([
        [0, 10],
        [10, 20],
      ]),
    ).toBe(1);
    expect(
      peakOverlap([
        [0, 10],
        [2, 9.5],
        [5, 30],
        [9, 12],
        [20, 25],
      ]),
    ).toBe(4);
    expect(
      peakOverlap([
        [5, 5],
        [1, 0],
      ]),
    ).toBe(0); // empty or reversed intervals are not open
  });
});

describe("judge (the issue's targets on the largest point)", () => {
  const small = point();
  it("passes a point that scales linearly", () => {
    const big = point({
      n: 1000,
      finished: 1000,
      completed: 1000,
      runnerCpuMs: 120_000,
      rssPeakMb: 1400,
      nomadCalls: 12_000,
      peakInLoop: 1000,
    });
    expect(judge(big, small)).toEqual([]);
  });

  it("fails a point whose trajectories were not all in their loop at one instant", () => {
    const big = point({ n: 1000, finished: 1000, completed: 1000, runnerCpuMs: 50_000, peakInLoop: 939 });
    expect(judge(big, small)).toEqual([
      "only 939 of 1000 trajectories were in their agent loop at one instant",
    ]);
    expect(overlapLine(big, { arrived: 987, gone: 13, openedAfterMs: 412_300, timedOut: false })).toBe(
      "peak overlap: 939 of 1000 trajectories in their agent loop at one instant " +
        "(hold: 987 arrived, 13 ended before, opened after 412.3 s)",
    );
    expect(overlapLine(big, { arrived: 5, gone: 0, openedAfterMs: undefined, timedOut: false })).toMatch(
      /never opened/,
    );
  });

  it("names every target that fails", () => {
    const big = point({
      n: 1000,
      finished: 990,
      completed: 980,
      lost: 10,
      runnerCpuMs: 200_000, // 200 ms/traj: ×2 of 100
      rssPeakMb: TARGETS.rssTotalMb + 100,
      gatewayAddedP99Ms: 9, // the wall figure is the machine's too: the target is on the own-core one
      gatewayRunP99Ms: 11,
      loopP99Ms: 30, // the wall figure is the machine's: the target is on the own one
      loopOwnP99Ms: 51,
    });
    const fails = judge(big, small).join("\n");
    expect(fails).toMatch(/20 of 1000 trajectories did not complete/);
    expect(fails).toMatch(/RSS peaked at 2148 MiB > 2048/);
    expect(fails).toMatch(/gateway p99 added \(own core\) 11\.0 ms > 10/);
    expect(fails).toMatch(/event-loop p99 \(own\) 51\.0 ms > 50/);
    expect(fails).toMatch(/CPU per trajectory ×2\.00/);
    expect(fails).toMatch(/RSS per trajectory ×/);
  });

  it("fails an unmeasured latency (NaN) rather than passing it", () => {
    expect(judge(point({ gatewayRunP99Ms: Number.NaN }), small).join()).toMatch(/gateway p99/);
  });

  it("names each latency goal met only once the machine's waits for a core are taken out", () => {
    expect(caveats(point())).toEqual([]);
    const c = caveats(point({ gatewayAddedP99Ms: 80, gatewayRunP99Ms: 6, loopP99Ms: 120, loopOwnP99Ms: 20 }));
    expect(c).toHaveLength(2);
    expect(c[0]).toMatch(/gateway p99 met only on its own core: 6\.0 ms run-capped, 80\.0 ms wall/);
    expect(c[1]).toMatch(/event-loop p99 met only without the machine's waits: 20\.0 ms own, 120\.0 ms wall/);
    // a goal missed even on its own core is a failure (judge), not a caveat
    expect(caveats(point({ gatewayAddedP99Ms: 80, gatewayRunP99Ms: 12 }))).toEqual([]);
  });

  it("prints the issue's last line with ratios against the smallest point", () => {
    const big = point({
      n: 1000,
      finished: 1000,
      runnerCpuMs: 150_000,
      rssPeakMb: 1200,
      gatewayAddedP99Ms: 40,
      gatewayRunP99Ms: 6,
      loopP99Ms: 300,
      loopOwnP99Ms: 24,
      idleLoopP99Ms: 250,
      peakInLoop: 1000,
    });
    expect(summaryLine(big, small)).toBe(
      "scale: 1000 concurrent, runner-cpu 150.0 ms/traj (×1.50 vs 10), rss 1.00 MiB/traj (×1.00 vs 10), " +
        "gateway-p99 6.0 ms (×2.00 vs 10; wall 40.0 ms), loop-p99 24.0 ms (×2.00 vs 10; wall 300.0 ms, idle process 250.0 ms), " +
        "peak-overlap 1000",
    );
  });
});

describe("the runner's own loop delay (own-loop.ts)", () => {
  it("caps a sample's lateness by the CPU time the thread ran meanwhile", () => {
    expect(ownDelayMs(40, 3)).toBe(3); // late because it waited for a core
    expect(ownDelayMs(40, 55)).toBe(40); // late because it ran our own work
    expect(ownDelayMs(0, 10)).toBe(0);
    expect(ownDelayMs(-1, 10)).toBe(0);
    expect(schedRunMs("340504 77034 2\n")).toBeCloseTo(0.340504);
    expect(schedRunMs("")).toBeUndefined();
  });

  it("samples this process's main thread: busy work shows as own delay", async () => {
    const m = startOwnLoopMonitor(5);
    await new Promise((r) => setTimeout(r, 30));
    // hold the loop until the thread RAN 60 ms (on a loaded machine that takes longer in wall time)
    const clock = threadRunClock()!;
    const [from, giveUp] = [clock.now(), performance.now() + 10_000];
    while (clock.now() - from < 60 && performance.now() < giveUp);
    clock.close();
    await new Promise((r) => setTimeout(r, 30));
    const { wallMs, ownMs } = m.stop();
    expect(wallMs.length).toBeGreaterThan(2);
    expect(Math.max(...wallMs)).toBeGreaterThanOrEqual(50);
    // the held loop ran on a core for most of its lateness (schedstat counts in ns)
    expect(Math.max(...ownMs)).toBeGreaterThan(10);
    for (const [i, o] of ownMs.entries()) expect(o).toBeLessThanOrEqual(wallMs[i]!);
  });
});

describe("the plot", () => {
  it("puts points on a log axis and plots CPU and RSS per trajectory by N", () => {
    expect(logPosition(10, 10, 1000)).toBe(0);
    expect(logPosition(100, 10, 1000)).toBeCloseTo(0.5);
    expect(logPosition(1000, 10, 1000)).toBe(1);
    expect(logPosition(5, 5, 5)).toBe(0.5);
    const series = plotSeries([point({ n: 100, runnerCpuMs: 20_000 }), point()]);
    expect(series.map((s) => s.title)).toEqual([
      "runner CPU per trajectory",
      "runner RSS per trajectory",
      "runner RSS peak",
    ]);
    expect(series[0]!.points).toEqual([
      { n: 10, y: 100 },
      { n: 100, y: 200 },
    ]);
    const svg = plotSvg(series);
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg.match(/<polyline/g)).toHaveLength(3);
    expect(svg).toContain(">200<"); // the 100-point's CPU label
  });
});

describe("the simulated worker's wire (gRPC framing, Cline-sized requests, SSE)", () => {
  it("frames messages and splits them back, keeping a partial one for later", () => {
    const a = frameMessage(Buffer.from("hello"));
    const b = frameMessage(Buffer.alloc(0));
    expect([...a.subarray(0, 5)]).toEqual([0, 0, 0, 0, 5]);
    const both = Buffer.concat([a, b, a.subarray(0, 7)]);
    const { messages, rest } = splitFrames(both);
    expect(messages.map((m) => m.toString())).toEqual(["hello", ""]);
    expect(rest.length).toBe(7);
    expect(() => splitFrames(Buffer.from([1, 0, 0, 0, 0]))).toThrow(/compressed/);
  });

  it("sends a Cline-sized request that grows by a tool result per turn", () => {
    const size = (n: number) =>
      JSON.stringify(
        chatRequest(
          "m",
          "fix it",
          Array.from({ length: n }, () => "ok"),
        ),
      ).length;
    expect(size(0)).toBeGreaterThan(SYSTEM_PROMPT_BYTES);
    expect(size(0)).toBeLessThan(SYSTEM_PROMPT_BYTES + 1024);
    expect(size(4) - size(0)).toBeGreaterThan(4 * TOOL_RESULT_BYTES);
    expect(chatRequest("m", "t", []).stream).toBe(true);
  });

  it("serializes a request from its pre-serialized pieces byte for byte", () => {
    for (const answers of [[], ["ok"], ['a "quoted" answer\n<tool/>', "ünïcode", "three"]])
      expect(chatRequestBody('model "x"', "fix\tit", answers)).toBe(
        JSON.stringify(chatRequest('model "x"', "fix\tit", answers)),
      );
  });

  it("posts Cline's state shape and reads a chat stream's deltas", () => {
    const s = JSON.parse(
      stateJson({
        messages: [{ ts: 1, type: "say", say: "text", text: "x" }],
        taskId: "t1",
        approvalVersion: 2,
      }),
    );
    expect(s.currentTaskItem.id).toBe("t1");
    expect(s.autoApprovalSettings.version).toBe(2);
    expect(s.clineMessages).toHaveLength(1);
    expect(sseDelta('data: {"choices":[{"delta":{"content":"ab"}}]}')).toEqual({ text: "ab" });
    expect(sseDelta('data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}')).toEqual({
      usage: { in: 5, out: 2 },
    });
    expect(sseDelta("data: [DONE]")).toEqual({ done: true });
    expect(sseDelta(": comment")).toEqual({});
  });
});
