import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  conmonOomMarkerIn,
  containerExitOf,
  killedFromOutside,
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

describe("killedFromOutside", () => {
  const base = { oomKilled: false, exitCode: 137, oomKills: 0, conmonOomMarker: false, memoryMb: 512 };

  it("an exec-only container's init ends by SIGKILL only from outside: status 137 is an outside kill", () => {
    expect(killedFromOutside(base)).toBe(true);
  });

  it("a container removed from outside (no exit status left) was killed from outside", () => {
    expect(killedFromOutside({ ...base, exitCode: undefined })).toBe(true);
  });

  it("any other status is the container's own end: the old init's `exit 0` on TERM, a failed fork (2)", () => {
    for (const exitCode of [0, 1, 2, 130, 139, 143])
      expect(killedFromOutside({ ...base, exitCode })).toBe(false);
  });

  it("a memory kill is the task's limit, never an outside kill, whichever fact tells it", () => {
    expect(killedFromOutside({ ...base, oomKilled: true })).toBe(false);
    expect(killedFromOutside({ ...base, oomKills: 1 })).toBe(false);
    expect(killedFromOutside({ ...base, conmonOomMarker: true, exitCode: undefined })).toBe(false);
  });
});
