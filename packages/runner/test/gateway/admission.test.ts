import { describe, expect, it } from "vitest";
import { admitCall, DEFAULT_MAX_CALLS_PER_TRAJECTORY } from "../../src/gateway/admission.js";

const base = { trajectoryId: "t1", inFlight: 0, maxInFlight: 4, contentLength: "100", maxBody: 1000 };

describe("admitCall", () => {
  it("admits a call under both bounds, and one without a Content-Length (chunked: bounded while read)", () => {
    expect(admitCall(base)).toBeUndefined();
    expect(admitCall({ ...base, contentLength: undefined })).toBeUndefined();
    expect(admitCall({ ...base, contentLength: "1000" })).toBeUndefined();
    expect(DEFAULT_MAX_CALLS_PER_TRAJECTORY).toBe(4);
  });

  it("refuses a declared body over the bound before reading it (413) and a bogus length (400)", () => {
    expect(admitCall({ ...base, contentLength: "1001" })).toEqual({
      status: 413,
      message: "flakegym gateway: request body larger than 1000 bytes",
      type: "invalid_request_error",
    });
    expect(admitCall({ ...base, contentLength: "12abc" })?.status).toBe(400);
    expect(admitCall({ ...base, contentLength: "99999999999999999999" })?.status).toBe(400);
  });

  it("refuses a trajectory's call past its in-flight bound (429), naming the trajectory and the option", () => {
    const r = admitCall({ ...base, inFlight: 4 });
    expect(r?.status).toBe(429);
    expect(r?.type).toBe("rate_limit_error");
    expect(r?.message).toContain("trajectory 't1' already has 4 model calls in flight");
    expect(r?.message).toContain("maxCallsPerTrajectory 4");
  });
});
