import { describe, expect, it } from "vitest";
import { gatewayListenOf, snapshotProgressLine } from "../../src/rollout/wire.js";

describe("gatewayListenOf", () => {
  it("the socket in scratch and loopback on a free port; an advertised address added as host and port", () => {
    expect(gatewayListenOf("/scratch/r", undefined)).toEqual([
      { socketPath: "/scratch/r/gateway.sock" },
      { host: "127.0.0.1", port: 0 },
    ]);
    expect(gatewayListenOf("/scratch/r", "[fd00::5]:7070")[2]).toEqual({ host: "fd00::5", port: 7070 });
  });
});

describe("snapshotProgressLine", () => {
  it("steps and waits are shown; the key, a cache hit and raw output are not", () => {
    expect(snapshotProgressLine({ kind: "step", step: "install", status: "ok", durationMs: 3 })).toBe(
      "install ok",
    );
    expect(snapshotProgressLine({ kind: "wait", key: "k" })).toBe(
      "waiting for another build of the same snapshot",
    );
    expect(snapshotProgressLine({ kind: "key", key: "k" })).toBeUndefined();
    expect(snapshotProgressLine({ kind: "cached", key: "k" })).toBeUndefined();
    expect(snapshotProgressLine({ kind: "output", text: "pip ..." })).toBeUndefined();
  });
});
