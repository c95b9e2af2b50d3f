import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { isOwnCancel, processInfoOf } from "../src/client.js";

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
