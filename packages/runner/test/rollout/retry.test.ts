import { describe, expect, it } from "vitest";
import { FlakegymError, UsageError } from "../../src/errors.js";
import { isRetryable, shouldRetry } from "../../src/rollout/retry.js";
import { type Outcome, OutcomeKind } from "../../src/run-format/schema.js";

const outcomeOf = (kind: Outcome["kind"]): Outcome =>
  kind === "limits_exceeded" || kind === "timeout"
    ? ({ kind, limit: "memory", detail: "d" } as Outcome)
    : ({ kind, detail: "d" } as Outcome);

describe("isRetryable", () => {
  it("retries infra_error only (never a limit, timeout, policy or agent failure)", () => {
    const retried = OutcomeKind.options.filter((k) => isRetryable({ outcome: outcomeOf(k) }));
    expect(retried).toEqual(["infra_error"]);
  });

  it("does not retry a cancel, nor thrown bad input; retries any other thrown failure", () => {
    expect(isRetryable({ outcome: { kind: "infra_error", cancelled: true, detail: "Ctrl-C" } })).toBe(false);
    expect(isRetryable({ error: new UsageError("policy spec 'x': unknown policy") })).toBe(false);
    expect(isRetryable({ error: new FlakegymError("E_NO_REFERENCE", "no reference") })).toBe(false);
    expect(isRetryable({ error: new FlakegymError("E_WORKER", "worker did not start") })).toBe(true);
    expect(isRetryable({ error: new Error("EBUSY") })).toBe(true);
  });
});

describe("shouldRetry", () => {
  it("stops after maxRetries retries", () => {
    const infra = { outcome: outcomeOf("infra_error") };
    expect([0, 1, 2].map((n) => shouldRetry(infra, n, 2))).toEqual([true, true, false]);
    expect(shouldRetry(infra, 0, 0)).toBe(false);
    expect(shouldRetry({ outcome: outcomeOf("limits_exceeded") }, 0, 5)).toBe(false);
  });
});
