import { describe, expect, it } from "vitest";
import { snapshotErrorOf } from "../../src/rollout/snapshot-error.js";
import { stoppedOf } from "../../src/rollout/summary.js";

describe("snapshotErrorOf: a full snapshot cache names its directory, the task and a next step", () => {
  it("a bare ENOSPC (errno or text) becomes E_DISK_FULL naming the cache; the run stops saying so", () => {
    const bare = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    for (const err of [bare, new Error("tar: write error: No space left on device")]) {
      const e = snapshotErrorOf(err, "/cache/snapshots", "semver-lite") as {
        code: string;
        message: string;
        hint: string;
      };
      expect(e.code).toBe("E_DISK_FULL");
      expect(e.message).toContain("/cache/snapshots");
      expect(e.message).toContain("semver-lite");
      expect(e.hint).toMatch(/free space on the filesystem of \/cache\/snapshots.*--resume/);
      // the task's error stops the run as a whole (summary.json `stopped`)
      expect(stoppedOf(new Map([["semver-lite", { code: e.code, message: e.message }]]))?.code).toBe(
        "E_DISK_FULL",
      );
    }
  });

  it("any other error passes through unchanged", () => {
    const other = new Error("git clone failed");
    expect(snapshotErrorOf(other, "/c", "t")).toBe(other);
  });
});
