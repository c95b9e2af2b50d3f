import { describe, expect, it } from "vitest";
import { decideLock, describeHolder, type RunLockRecord } from "../../src/rollout/run-lock-decision.js";

const here = { host: "box", bootId: "b-1", pidNs: "pid:[1]" };
const holder: RunLockRecord = {
  pid: 4242,
  startTime: "1000",
  bootId: "b-1",
  pidNs: "pid:[1]",
  host: "box",
  command: "rollout",
  startedAt: "2026-11-26T03:00:00.000Z",
  nonce: "n1",
};

describe("decideLock", () => {
  it("a holder whose pid runs with its start time holds the directory", () => {
    expect(decideLock(holder, here, "1000")).toEqual({ kind: "held", why: "pid 4242 is running" });
  });

  it("a gone pid, a reused pid or an earlier boot is a dead holder: taken over", () => {
    expect(decideLock(holder, here, undefined)).toMatchObject({ kind: "take-over", why: /is gone/ });
    expect(decideLock(holder, here, "2000")).toMatchObject({ kind: "take-over", why: /another process/ });
    expect(decideLock({ ...holder, bootId: "b-0" }, here, "1000")).toMatchObject({
      kind: "take-over",
      why: /rebooted/,
    });
  });

  it("what cannot be judged is held: another host, another pid namespace, an unreadable record", () => {
    expect(decideLock({ ...holder, host: "other" }, here, undefined)).toMatchObject({
      kind: "held",
      why: /another host \(other\)/,
    });
    expect(decideLock({ ...holder, pidNs: "pid:[2]" }, here, undefined)).toMatchObject({
      kind: "held",
      why: /pid namespace/,
    });
    expect(decideLock(undefined, here, undefined)).toMatchObject({ kind: "held", why: /cannot be read/ });
  });

  it("names the holder's command, pid, host and start", () => {
    expect(describeHolder(holder)).toBe(
      "flakegym rollout (pid 4242 on box, started 2026-11-26T03:00:00.000Z)",
    );
  });
});
