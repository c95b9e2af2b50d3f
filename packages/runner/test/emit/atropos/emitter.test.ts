import { describe, expect, it } from "vitest";
import { registerGaveUp } from "../../../src/emit/atropos/emitter.js";

// The emitter's pure half; registering, back-pressure and sends run against a real run-api in
// tests/integration/emit/atropos-emitter.test.ts.

describe("registerGaveUp", () => {
  it("names the wait and the last error, or says the trainer has not started", () => {
    expect(registerGaveUp(2_000, "ECONNREFUSED")).toBe(
      "the run-api did not register this env within --atropos-wait (2000 ms) (last error: ECONNREFUSED)",
    );
    expect(registerGaveUp(500, undefined)).toBe(
      "the run-api did not register this env within --atropos-wait (500 ms) (the trainer has not started)",
    );
  });
});
