import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { toCamelKeys } from "../src/case.js";
import { isOwnCancel, partialMessageFields, processInfoOf } from "../src/client.js";
import { fromProtoMessage } from "../src/messages.js";

describe("isOwnCancel", () => {
  it("is quiet only for CANCELLED after the caller aborted or the stream finished", () => {
    expect(isOwnCancel(grpc.status.CANCELLED, true, false)).toBe(true);
    expect(isOwnCancel(grpc.status.CANCELLED, false, true)).toBe(true);
    expect(isOwnCancel(grpc.status.CANCELLED, false, false)).toBe(false);
    expect(isOwnCancel(grpc.status.UNAVAILABLE, true, true)).toBe(false);
    expect(isOwnCancel(grpc.status.INTERNAL, false, false)).toBe(false);
  });
});

describe("processInfoOf", () => {
  it("fills unset fields and leaves out an unset uptime", () => {
    expect(processInfoOf({})).toEqual({ processId: 0, version: "" });
    expect(processInfoOf({ processId: 42, version: "1.0.10", uptimeMs: null })).toEqual({
      processId: 42,
      version: "1.0.10",
    });
    expect(processInfoOf({ processId: 42, version: "1.0.10", uptimeMs: 0 })).toEqual({
      processId: 42,
      version: "1.0.10",
      uptimeMs: 0,
    });
  });
});

describe("partialMessageFields (a streamed chunk's fields, picked without the deep key conversion)", () => {
  it("parses to the same message as the converted chunk", () => {
    // a proto ClineMessage as the client decodes it (defaults filled, snake_case field names)
    const chunk = {
      ts: 1733580000123,
      type: "SAY",
      ask: "FOLLOWUP",
      say: "TEXT",
      text: "let me look",
      reasoning: "",
      partial: true,
      images: [],
      files: [],
      conversation_history_index: 3,
      conversation_history_deleted_range: { start_index: 0, end_index: 0 },
      is_cloud_sync: false,
      last_checkpoint_hash: "",
    };
    expect(fromProtoMessage(partialMessageFields(chunk))).toEqual(fromProtoMessage(toCamelKeys(chunk)));
    const ask = { ...chunk, type: "ASK", ask: "COMMAND", partial: false };
    expect(fromProtoMessage(partialMessageFields(ask))).toEqual(fromProtoMessage(toCamelKeys(ask)));
    expect(partialMessageFields(null)).toBeNull();
  });
});
