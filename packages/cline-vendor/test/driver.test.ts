import { describe, expect, it } from "vitest";
import {
  autoApprovalSettingsFor,
  idleDetail,
  isModelOutput,
  messageFingerprint,
  modelRequestsExceeded,
  rawStateFingerprint,
  toolCallsExceeded,
  watchdogPeriodMs,
  watchdogVerdict,
} from "../src/driver.js";
import type { ClineMessage } from "../src/messages.js";

describe("idleDetail", () => {
  it("names the quiet command the agent runs instead of blaming the policy", () => {
    const d = idleDetail(300_000, "cargo build --release\nsecond line");
    expect(d).toContain("`cargo build --release`");
    expect(d).toContain("300000 ms");
    expect(d).toContain("raise the idle limit");
    expect(d).not.toMatch(/policy/);
  });

  it("without a running command says nothing came from the core, with the last error's first line", () => {
    const d = idleDetail(5_000, undefined, "boom\nstack");
    expect(d).toMatch(/^no new message from the core for 5000 ms/);
    expect(d).toMatch(/last error: boom$/);
  });
});

const say = (say: ClineMessage["say"], text = "", partial = false): ClineMessage => ({
  ts: 1,
  type: "say",
  say,
  text,
  partial,
});
const ask = (ask: ClineMessage["ask"], text = ""): ClineMessage => ({
  ts: 1,
  type: "ask",
  ask,
  text,
  partial: false,
});

describe("messageFingerprint", () => {
  it("changes with the partial flag, the text and reasoning lengths and the kind, not the text itself", () => {
    const a = say("text", "abc");
    expect(messageFingerprint(a)).toBe(messageFingerprint(say("text", "xyz")));
    expect(messageFingerprint(a)).not.toBe(messageFingerprint(say("text", "abcd")));
    expect(messageFingerprint(a)).not.toBe(messageFingerprint(say("text", "abc", true)));
    expect(messageFingerprint(a)).not.toBe(messageFingerprint({ ...a, reasoning: "r" }));
    expect(messageFingerprint(a)).not.toBe(messageFingerprint(ask("followup", "abc")));
  });
});

describe("rawStateFingerprint (a state post's unchanged messages are not parsed again)", () => {
  const raw = { ts: 5, type: "say", say: "text", text: "abc", partial: false };
  it("tells versions apart exactly as messageFingerprint does after the parse", () => {
    const fp = rawStateFingerprint(raw)!;
    expect(fp.ts).toBe(5);
    expect(rawStateFingerprint({ ...raw })!.print).toBe(fp.print);
    for (const changed of [
      { text: "abcd" },
      { partial: true },
      { reasoning: "r" },
      { say: "completion_result" },
      { type: "ask", ask: "followup" },
    ])
      expect(rawStateFingerprint({ ...raw, ...changed })!.print).not.toBe(fp.print);
    // a missing text and an empty one parse alike (text ?? "")
    expect(rawStateFingerprint({ ...raw, text: undefined })!.print).toBe(
      rawStateFingerprint({ ...raw, text: "" })!.print,
    );
  });

  it("leaves entries of another shape to the parser (never skips what it cannot identify)", () => {
    expect(rawStateFingerprint(null)).toBeUndefined();
    expect(rawStateFingerprint("x")).toBeUndefined();
    expect(rawStateFingerprint({ ...raw, ts: "5" })).toBeUndefined();
    expect(rawStateFingerprint({ ...raw, text: 7 })).toBeUndefined();
    expect(rawStateFingerprint({ ...raw, reasoning: {} })).toBeUndefined();
  });
});

describe("isModelOutput", () => {
  it("counts nothing before the first model request (the echoed prompt is a text say)", () => {
    expect(isModelOutput(say("text", "the prompt"), false)).toBe(false);
    expect(isModelOutput(ask("tool"), false)).toBe(false);
  });

  it("counts model text, reasoning, completion and tool/follow-up/completion asks once a turn started", () => {
    for (const s of ["text", "reasoning", "completion_result"] as const)
      expect(isModelOutput(say(s), true)).toBe(true);
    for (const a of ["tool", "command", "followup", "completion_result"] as const)
      expect(isModelOutput(ask(a), true)).toBe(true);
    expect(isModelOutput(say("api_req_started"), true)).toBe(false);
    expect(isModelOutput(ask("api_req_failed"), true)).toBe(false);
  });
});

describe("limits", () => {
  it("ends only past the limit, naming the count and the limit", () => {
    expect(modelRequestsExceeded(3, 3)).toBeUndefined();
    expect(modelRequestsExceeded(4, 3)).toEqual({
      kind: "limits_exceeded",
      limit: "model_requests",
      detail: "the agent started model request 4; the limit is 3",
    });
    expect(toolCallsExceeded(2, 2)).toBeUndefined();
    expect(toolCallsExceeded(3, 2)).toMatchObject({
      limit: "tool_calls",
      detail: expect.stringContaining("tool call 3"),
    });
  });
});

describe("watchdogVerdict", () => {
  const limits = { wallClockMs: 1000, idleMs: 100 };
  const at = (now: number, lastProgress: number) =>
    watchdogVerdict({
      now,
      tStart: 0,
      lastProgress,
      limits,
      runningCommand: undefined,
      lastError: undefined,
    });

  it("is quiet while within both limits", () => {
    expect(at(500, 450)).toBeUndefined();
  });

  it("calls a stall when no progress came for longer than idleMs", () => {
    expect(at(500, 399)).toEqual({ kind: "timeout", limit: "idle", detail: idleDetail(100, undefined) });
  });

  it("names the wall clock first when both fire", () => {
    expect(at(1001, 0)).toMatchObject({ kind: "timeout", limit: "wall_clock" });
  });
});

describe("watchdogPeriodMs", () => {
  it("is a tenth of the shorter limit, within 25 to 250 ms", () => {
    expect(watchdogPeriodMs({ wallClockMs: 60_000, idleMs: 1000 })).toBe(100);
    expect(watchdogPeriodMs({ wallClockMs: 60_000, idleMs: 60_000 })).toBe(250);
    expect(watchdogPeriodMs({ wallClockMs: 100, idleMs: 60_000 })).toBe(25);
  });
});

describe("autoApprovalSettingsFor", () => {
  it("bumps the core's version and approves nothing unless everything is auto-approved", () => {
    const ours = autoApprovalSettingsFor(undefined, false);
    expect(ours.version).toBe(1);
    expect(Object.values(ours.actions).every((v) => v === false)).toBe(true);
    const yolo = autoApprovalSettingsFor(4, true);
    expect(yolo.version).toBe(5);
    expect(yolo.actions.executeAllCommands).toBe(true);
    expect(yolo.actions.useBrowser).toBe(false);
  });
});
