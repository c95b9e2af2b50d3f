import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { snapshotTextReader } from "../../src/scoring/snapshot-files.js";

let root: string;
let outside: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "flakegym-snapshot-text-"));
  outside = await mkdtemp(join(tmpdir(), "flakegym-snapshot-outside-"));
  await mkdir(join(root, "pkg"));
  await writeFile(join(root, "pkg", "m.py"), "x = 1\n");
  await writeFile(join(outside, "secret.py"), "secret\n");
  await symlink(join(outside, "secret.py"), join(root, "pkg", "link.py"));
  await symlink(outside, join(root, "dir-link"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe("snapshotTextReader: the code reading's originals, paths from the agent's diff", () => {
  it("reads a plain relative regular file", async () => {
    expect(await snapshotTextReader(root)("pkg/m.py")).toBe("x = 1\n");
  });
  it("never leaves the snapshot: .., absolute, empty parts and symlinks on the way are undefined", async () => {
    const read = snapshotTextReader(root);
    for (const p of [
      "../" + outside.split("/").pop() + "/secret.py",
      "pkg/../pkg/m.py",
      `${outside}/secret.py`,
      "pkg//m.py",
      "./pkg/m.py",
      "pkg/link.py",
      "dir-link/secret.py",
      "pkg/absent.py",
    ])
      expect(await read(p), p).toBeUndefined();
  });
});
