import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  conmonOomMarkerIn,
  containerExitOf,
  parseExitState,
} from "../../../src/workers/podman/container-exit.js";

describe("containerExitOf", () => {
  const base = { oomKilled: false, exitCode: 137, oomKills: 0, conmonOomMarker: false, memoryMb: 512 };

  it("a memory kill is the memory limit, by podman's word or by the cgroup's OOM count", () => {
    expect(containerExitOf({ ...base, oomKilled: true })).toMatchObject({ reason: "memory" });
    // runc on a hybrid cgroup host may leave OOMKilled false: the cgroup still counted the kill
    expect(containerExitOf({ ...base, oomKills: 1 })).toMatchObject({
      reason: "memory",
      detail: expect.stringContaining("512 MiB"),
    });
  });

  it("conmon's OOM marker is a memory kill when podman and the cgroup both missed it", () => {
    // seen on a hybrid cgroup host: OOMKilled false, the count 0 or the cgroup gone, marker present
    for (const oomKills of [0, undefined])
      expect(containerExitOf({ ...base, oomKills, conmonOomMarker: true })).toMatchObject({
        reason: "memory",
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

  it("reads conmon's marker only as a regular file in the worker's dir", async () => {
    const dir = await mkdtemp(join(tmpdir(), "flakegym-oom-marker-"));
    try {
      expect(await conmonOomMarkerIn(dir)).toBe(false);
      await symlink("/etc/hostname", join(dir, "oom"));
      expect(await conmonOomMarkerIn(dir)).toBe(false);
      await rm(join(dir, "oom"));
      await mkdir(join(dir, "oom"));
      expect(await conmonOomMarkerIn(dir)).toBe(false);
      await rm(join(dir, "oom"), { recursive: true });
      await writeFile(join(dir, "oom"), "");
      expect(await conmonOomMarkerIn(dir)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("parses podman's exit state", () => {
    expect(parseExitState("true 137\n")).toEqual({ oomKilled: true, exitCode: 137 });
    expect(parseExitState("false 0")).toEqual({ oomKilled: false, exitCode: 0 });
    expect(parseExitState("")).toEqual({ oomKilled: false, exitCode: undefined });
  });
});
