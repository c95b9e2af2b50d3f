import { describe, expect, it } from "vitest";
import { activeFault, completionEvents, decideAnswer } from "../src/scripted-openai-server.js";

const base = {
  method: "POST",
  path: "/v1/chat/completions",
  authorization: undefined,
  apiKey: undefined,
  nextTurn: 0,
  turnCount: 2,
  fault: undefined,
  faultUses: 0,
} as const;

describe("activeFault", () => {
  it("applies a hang on every request and a counted fault only while used < times", () => {
    expect(activeFault({ kind: "hang" }, 7)).toEqual({ kind: "hang" });
    const status = { kind: "status", status: 503, times: 2 } as const;
    expect(activeFault(status, 1)).toBe(status);
    expect(activeFault(status, 2)).toBeUndefined();
    expect(activeFault({ kind: "malformed", times: 1 }, 1)).toBeUndefined();
    expect(activeFault(undefined, 0)).toBeUndefined();
  });
});

describe("decideAnswer", () => {
  it("routes only POST to /v1/chat/completions or /chat/completions", () => {
    expect(decideAnswer({ ...base, method: "GET" })).toEqual({ kind: "not_found" });
    expect(decideAnswer({ ...base, path: "/v1/models" })).toEqual({ kind: "not_found" });
    expect(decideAnswer({ ...base, path: "/chat/completions" })).toEqual({ kind: "reply", turn: 0 });
  });

  it("checks the bearer before the script, and routing before the bearer", () => {
    const keyed = { ...base, apiKey: "k", turnCount: 0 };
    expect(decideAnswer({ ...keyed, authorization: "Bearer x" })).toEqual({ kind: "unauthorized" });
    expect(decideAnswer({ ...keyed, authorization: undefined, method: "PUT" })).toEqual({
      kind: "not_found",
    });
    expect(decideAnswer({ ...keyed, authorization: "Bearer k" })).toEqual({ kind: "exhausted" });
  });

  it("answers the next turn, with its fault while active", () => {
    const fault = { kind: "malformed", times: 1 } as const;
    expect(decideAnswer({ ...base, nextTurn: 1, fault })).toEqual({ kind: "fault", turn: 1, fault });
    expect(decideAnswer({ ...base, nextTurn: 1, fault, faultUses: 1 })).toEqual({ kind: "reply", turn: 1 });
    expect(decideAnswer({ ...base, nextTurn: 2 })).toEqual({ kind: "exhausted" });
  });
});

describe("completionEvents", () => {
  const meta = { id: "chatcmpl-1", created: 5, model: "m", chunkSize: 3 };
  const deltas = (events: (object | string)[]) =>
    events.map((e) =>
      typeof e === "string" ? e : ((e as { choices: { delta: object }[] }).choices[0]?.delta ?? e),
    );

  it("streams text in chunks, finishes with stop and estimates usage at ~4 chars a token", () => {
    const events = completionEvents({ text: "abcdefg" }, meta, 9, () => "call_x");
    expect(deltas(events).slice(0, 5)).toEqual([
      { role: "assistant", content: "" },
      { content: "abc" },
      { content: "def" },
      { content: "g" },
      {},
    ]);
    expect(events[4]).toMatchObject({ choices: [{ finish_reason: "stop" }] });
    expect(events[5]).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("streams tool calls with fresh ids and argument chunks, finishing with tool_calls", () => {
    let n = 0;
    const turn = {
      tool_calls: [{ name: "read_file", arguments: { path: "a" } }],
      usage: { prompt_tokens: 1, completion_tokens: 2 },
    };
    const events = completionEvents(turn, meta, 100, () => `call_${n++}`);
    const ds = deltas(events);
    expect(ds[1]).toEqual({
      tool_calls: [
        { index: 0, id: "call_0", type: "function", function: { name: "read_file", arguments: "" } },
      ],
    });
    const args = ds
      .slice(2, -3)
      .map(
        (d) => (d as { tool_calls: { function: { arguments: string } }[] }).tool_calls[0]!.function.arguments,
      )
      .join("");
    expect(args).toBe('{"path":"a"}');
    expect(events.at(-3)).toMatchObject({ choices: [{ finish_reason: "tool_calls" }] });
    expect(events.at(-2)).toMatchObject({
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    });
  });
});
