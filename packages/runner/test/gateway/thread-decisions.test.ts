import { describe, expect, it } from "vitest";
import {
  initialStatus,
  statusFromAnswers,
  threadDeathError,
  threadErrorOf,
  threadUpstreamOf,
  workerSource,
} from "../../src/gateway/thread.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { PlanUpstream } from "../../src/policy/scripted-upstream.js";
import { UpstreamError } from "../../src/policy/upstream.js";

// The decisions of the runner's side of the gateway thread (pure); thread.test.ts runs the thread.

describe("workerSource: where the gateway thread's code comes from", () => {
  it("is the CLI bundle's worker when the process runs from a bundle that has one", () => {
    const w = workerSource("file:///src/gateway/thread.ts", "/cache/cli-abc/thread-worker.js");
    expect(w).toEqual({ kind: "bundle", url: new URL("file:///cache/cli-abc/thread-worker.js") });
  });

  it("is the sibling module otherwise: TypeScript through tsx, JavaScript as built", () => {
    expect(workerSource("file:///src/gateway/thread.ts", undefined)).toEqual({
      kind: "tsx",
      url: new URL("file:///src/gateway/thread-worker.ts"),
    });
    expect(workerSource("file:///dist/gateway/thread.js", undefined)).toEqual({
      kind: "js",
      url: new URL("file:///dist/gateway/thread-worker.js"),
    });
  });
});

describe("threadErrorOf: an error as it crosses to the gateway thread", () => {
  it("an UpstreamError keeps its status and terminal mark; anything else only its message", () => {
    expect(threadErrorOf(new UpstreamError("plan ran out", 500, { terminal: true }))).toEqual({
      message: "plan ran out",
      upstream: { status: 500, terminal: true },
    });
    expect(threadErrorOf(new UpstreamError("busy", 429))).toEqual({
      message: "busy",
      upstream: { status: 429, terminal: false },
    });
    expect(threadErrorOf(new TypeError("x is undefined"))).toEqual({ message: "x is undefined" });
    expect(threadErrorOf("a string")).toEqual({ message: "a string" });
  });
});

describe("threadUpstreamOf: where a trajectory's calls go", () => {
  it("a portable upstream is rebuilt in the gateway's thread; a scripted plan's calls come back here", () => {
    const openai = new OpenAiUpstream({ baseUrl: "http://127.0.0.1:9/v1", model: "m" });
    expect(threadUpstreamOf(openai)).toEqual({ portable: openai.portable });
    expect(openai.portable).toBeDefined();
    const plan = new PlanUpstream("scripted", "scripted:p", []);
    expect(threadUpstreamOf(plan)).toEqual({ proxy: { id: "scripted:p", kind: "scripted", secrets: [] } });
  });
});

describe("initialStatus and statusFromAnswers: a trajectory's status as the runner's thread knows it", () => {
  const last = initialStatus("t-1", "scripted:p");
  it("starts at nothing happened", () => {
    expect(last).toEqual({
      trajectoryId: "t-1",
      upstream: "scripted:p",
      requests: 0,
      ok: 0,
      failed: 0,
      refused: 0,
      inFlight: 0,
      promptTokens: 0,
      completionTokens: 0,
      terminal: undefined,
    });
  });

  it("takes only the answer to this request; a late answer to an older one, or none, keeps the last known", () => {
    const now = { ...last, requests: 3, ok: 3 };
    const stale = { ...last, requests: 1, ok: 1 };
    expect(
      statusFromAnswers(
        [
          { reply: 4, status: stale },
          { reply: 5, status: now },
        ],
        5,
        last,
      ),
    ).toBe(now);
    expect(statusFromAnswers([{ reply: 4, status: stale }], 5, last)).toBe(last);
    expect(statusFromAnswers([], 5, last)).toBe(last);
    expect(statusFromAnswers([{ reply: 5, status: undefined }], 5, last)).toBe(last);
  });
});

describe("threadDeathError: what every trajectory fails with once the thread is gone", () => {
  it("an E_GATEWAY infra fault naming what happened to the thread", () => {
    const err = threadDeathError("exited (code 1)");
    expect(err.code).toBe("E_GATEWAY");
    expect(err.message).toBe("policy gateway thread exited (code 1); its trajectories' model calls were cut");
    expect(err.hint).toBe("an infrastructure fault, not the policy's: the trajectories are retried");
  });
});
