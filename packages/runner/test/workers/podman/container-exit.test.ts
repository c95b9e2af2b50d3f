import { describe, expect, it } from "vitest";
import { containerExitOf, parseExitState } from "../../../src/workers/podman/container-exit.js";

describe("containerExitOf", () => {
  const base = { oomKilled: false, exitCode: 137, oomKills: 0, memoryMb: 512 };

  it("a memory kill is the memory limit, by podman's word or by the cgroup's OOM count", () => {
    expect(containerExitOf({ ...base, oomKilled: true })).toMatchObject({ reason: "memory" });
    // runc on a hybrid cgroup host may leave OOMKilled false: the cgroup still counted the kill
    expect(containerExitOf({ ...base, oomKills: 1 })).toMatchObject({
      reason: "memory",
      detail: expect.stringContaining("512 MiB"),
    });
  });

  it("anything else is a crash naming the exit status", () => {
    expect(containerExitOf(base)).toEqual({
      reason: "crashed",
      detail: "the container exited with status 137",
    });
    expect(containerExitOf({ ...base, exitCode: undefined, oomKills: undefined })).toEqual({
      reason: "crashed",
      detail: "the container exited",
    });
  });

  it("parses podman's exit state", () => {
    expect(parseExitState("true 137\n")).toEqual({ oomKilled: true, exitCode: 137 });
    expect(parseExitState("false 0")).toEqual({ oomKilled: false, exitCode: 0 });
    expect(parseExitState("")).toEqual({ oomKilled: false, exitCode: undefined });
  });
});
