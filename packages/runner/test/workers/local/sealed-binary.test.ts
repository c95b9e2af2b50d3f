import { execFileSync } from "node:child_process";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  isSealedMode,
  keptProcesses,
  SEALED_MODE,
  sealedCopy,
  sealedPathOf,
  unsealedOf,
} from "../../../src/workers/local/sealed-binary.js";

describe("sealed binaries (execute-only copies of the kept processes' binaries)", () => {
  it("calls a mode sealed only when nobody may read it and someone may exec it", () => {
    expect(isSealedMode(0o100111)).toBe(true);
    expect(isSealedMode(0o100100)).toBe(true);
    expect(isSealedMode(0o100511)).toBe(false); // the owner (the sandbox's uid) could read it
    expect(isSealedMode(0o100115)).toBe(false);
    expect(isSealedMode(0o100000)).toBe(false); // nobody can run it
  });

  it("keys a copy by the source's path, size and mtime", () => {
    const a = sealedPathOf("/c", "/usr/bin/node", 10, 1000.7);
    expect(a).toMatch(/^\/c\/sealed-bin\/[0-9a-f]{16}\/node$/);
    expect(sealedPathOf("/c", "/usr/bin/node", 10, 1000.2)).toBe(a);
    expect(sealedPathOf("/c", "/usr/bin/node", 11, 1000)).not.toBe(a);
    expect(sealedPathOf("/c", "/opt/node", 10, 1000)).not.toBe(a);
  });

  it("lists every kept process but bwrap's that runs a readable (or unknown) binary", () => {
    expect(
      unsealedOf([
        { pid: 1, comm: "bwrap", exeMode: 0o100755 },
        { pid: 2, comm: "node", exeMode: 0o100111 },
        { pid: 3, comm: "cline-host-linu", exeMode: 0o100755 },
        { pid: 4, comm: "node", exeMode: undefined },
      ]),
    ).toEqual([3, 4]);
  });

  it("makes one execute-only copy that runs, and reads a live process's binary mode", async () => {
    // this node as the binary: the unit layer's Nix replay has no coreutils
    const dir = await mkdtemp(join(tmpdir(), "flakegym-sealed-"));
    try {
      const dest = await sealedCopy(dir, process.execPath);
      expect(dest.startsWith(join(dir, "sealed-bin"))).toBe(true);
      expect((await stat(dest)).mode & 0o777).toBe(SEALED_MODE);
      expect(await sealedCopy(dir, process.execPath)).toBe(dest); // made once
      expect(execFileSync(dest, ["-e", "process.stdout.write('ran')"]).toString()).toBe("ran");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const [self] = await keptProcesses([process.pid]);
    expect(self?.comm.length).toBeGreaterThan(0);
    expect(isSealedMode(self!.exeMode!)).toBe(false); // this node is readable
  });
  it("many makers at once (the workers of one run starting together) all get the one copy; no temp is left", async () => {
    // a small source: what is checked is the naming of the makers' temps, not the copy's size
    const dir = await mkdtemp(join(tmpdir(), "flakegym-sealed-race-"));
    try {
      const src = join(dir, "tool");
      await writeFile(src, Buffer.alloc(256 * 1024, 7));
      const made = await Promise.allSettled(Array.from({ length: 8 }, () => sealedCopy(dir, src)));
      const failed = made.flatMap((m) => (m.status === "rejected" ? [String(m.reason)] : []));
      expect(failed).toEqual([]);
      const dests = new Set(made.map((m) => (m as PromiseFulfilledResult<string>).value));
      expect(dests.size).toBe(1);
      const dest = [...dests][0]!;
      expect((await stat(dest)).mode & 0o777).toBe(SEALED_MODE);
      expect(await readdir(join(dest, ".."))).toEqual(["tool"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
