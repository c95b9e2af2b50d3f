import { describe, expect, it } from "vitest";
import { fromProtoMessage, fromStateMessage, parseStateJson } from "../src/messages.js";

describe("Cline messages from both streams", () => {
  it("reads proto messages: enum names, _SAY suffixes, zero values", () => {
    expect(
      fromProtoMessage({ ts: "17", type: "SAY", say: "COMPLETION_RESULT_SAY", text: "done", partial: false }),
    ).toEqual({
      ts: 17,
      type: "say",
      say: "completion_result",
      text: "done",
      partial: false,
    });
    // proto3 omits zero values: type ASK, ask FOLLOWUP, say TASK
    expect(fromProtoMessage({ ts: 5 })).toMatchObject({ type: "ask", ask: "followup" });
    expect(fromProtoMessage({ ts: 5, type: "SAY" })).toMatchObject({ type: "say", say: "task" });
    expect(fromProtoMessage({ ts: 5, type: "ASK", text: "which?" })).toMatchObject({
      type: "ask",
      ask: "followup",
    });
    expect(fromProtoMessage({ ts: 5, type: "ASK", ask: "COMMAND_OUTPUT", partial: true })).toMatchObject({
      ask: "command_output",
      partial: true,
    });
    expect(fromProtoMessage({ ts: 5, type: "ASK", ask: "SOMETHING_NEW" })).toMatchObject({ ask: "unknown" });
  });

  it("reads state messages (Cline's own objects)", () => {
    expect(
      fromStateMessage({ ts: 9, type: "ask", ask: "tool", text: "{}", partial: false, extra: 1 }),
    ).toEqual({
      ts: 9,
      type: "ask",
      ask: "tool",
      text: "{}",
      partial: false,
    });
    expect(fromStateMessage({ ts: 9, type: "say", say: "api_req_started" })).toMatchObject({
      text: "",
      partial: false,
    });
    expect(() => fromStateMessage({ type: "say" })).toThrow();
  });

  it("parses the fields of state_json the driver uses and keeps the rest", () => {
    const s = parseStateJson(
      JSON.stringify({
        clineMessages: [{ ts: 1 }],
        mode: "act",
        autoApprovalSettings: { version: 3, x: 1 },
        other: 2,
      }),
    );
    expect(s.clineMessages).toHaveLength(1);
    expect(s.autoApprovalSettings?.version).toBe(3);
    expect(s["other"]).toBe(2);
    expect(parseStateJson("{}").clineMessages).toEqual([]);
  });
});
