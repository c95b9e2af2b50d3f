import { describe, expect, it } from "vitest";
import {
  formatDuration,
  formatWait,
  hours,
  milliseconds,
  minutes,
  seconds,
  toMilliseconds,
} from "../src/duration.js";

describe("durations are integer nanoseconds", () => {
  it("converts units exactly", () => {
    expect(seconds(5)).toBe(5_000_000_000);
    expect(milliseconds(250)).toBe(250_000_000);
    expect(minutes(30)).toBe(1_800_000_000_000);
    expect(hours(24)).toBe(86_400_000_000_000);
    expect(Number.isSafeInteger(hours(24 * 100))).toBe(true);
    expect(toMilliseconds(seconds(1.5))).toBe(1500);
  });

  it("formats like Go's time.Duration and the Go client's wait parameter", () => {
    expect(formatDuration(hours(24))).toBe("24h0m0s");
    expect(formatDuration(minutes(1) + seconds(30))).toBe("1m30s");
    expect(formatDuration(milliseconds(150))).toBe("150ms");
    expect(formatDuration(0)).toBe("0s");
    expect(formatWait(5000)).toBe("5000ms");
    expect(() => formatWait(-1)).toThrow("non-negative");
  });
});
