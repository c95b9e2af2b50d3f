import { describe, expect, it } from "vitest";
import { containerFreezeOf } from "../../../src/workers/podman/container-frozen.js";

describe("containerFreezeOf: a freeze only the host can make", () => {
  it("a paused container (podman pause: its cgroup frozen)", () => {
    expect(containerFreezeOf("paused\n", false)).toBe("its container is paused (podman pause)");
  });
  it("a stopped PID 1 (nothing inside can stop a pid namespace's init)", () => {
    expect(containerFreezeOf("running", true)).toMatch(/PID 1, which nothing inside the container can stop/);
  });
  it("running, PID 1 not stopped: nothing", () => {
    expect(containerFreezeOf("running", false)).toBeUndefined();
    expect(containerFreezeOf("exited", false)).toBeUndefined();
  });
});
