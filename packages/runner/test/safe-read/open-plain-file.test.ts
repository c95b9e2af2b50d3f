import { execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readTargetFile } from "../../src/contract/safe-read.js";
import { isUnder, openPlainFileUnder } from "../../src/safe-read/open-plain-file.js";
import { openSafeRoot } from "../../src/view/safe-read.js";

let dir: string;
let root: string;
let outside: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-safe-read-"));
  root = join(dir, "root");
  outside = join(dir, "outside");
  await mkdir(join(root, "a"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(root, "a", "f"), "inside");
  await writeFile(join(outside, "f"), "SECRET");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readVia(parts: string[]): Promise<string | undefined> {
  const fh = await openPlainFileUnder(root, parts);
  if (!fh) return undefined;
  try {
    return (await fh.readFile()).toString("utf8");
  } finally {
    await fh.close();
  }
}

describe("openPlainFileUnder", () => {
  it("opens a plain file under the root; refuses a symlinked file, a symlinked ancestor, a FIFO, a dir", async () => {
    expect(await readVia(["a", "f"])).toBe("inside");
    await symlink(join(outside, "f"), join(root, "link"));
    await symlink(outside, join(root, "dirlink"));
    execFileSync("mkfifo", [join(root, "fifo")]);
    expect(await readVia(["link"])).toBeUndefined();
    expect(await readVia(["dirlink", "f"])).toBeUndefined();
    expect(await readVia(["fifo"])).toBeUndefined();
    expect(await readVia(["a"])).toBeUndefined();
    expect(await readVia(["absent"])).toBeUndefined();
  });

  it("isUnder: the root itself and paths below it, never a sibling sharing its prefix", () => {
    expect(isUnder("/r/root", "/r/root")).toBe(true);
    expect(isUnder("/r/root", "/r/root/a/f")).toBe(true);
    expect(isUnder("/r/root", "/r/root2/f")).toBe(false);
    expect(isUnder("/r/root", "/r/outside/f")).toBe(false);
  });

  it("an ancestor swapped for a symlink while reads run never yields the outside file (contract and viewer readers)", async () => {
    // The attack: between the ancestor checks and the open, `a` becomes a symlink to `outside`.
    // A swapper process flips it as fast as it can; a naive read proves the race is live.
    await mkdir(join(root, "real"));
    await writeFile(join(root, "real", "f"), "inside");
    await rm(join(root, "a"), { recursive: true });
    await symlink(outside, join(root, "link"));
    const swapper = spawn(
      process.execPath,
      [
        "-e",
        `const fs = require("node:fs"); process.chdir(${JSON.stringify(root)});
         for (;;) { try { fs.renameSync("real", "a"); fs.renameSync("a", "real"); fs.renameSync("link", "a"); fs.renameSync("a", "link"); } catch {} }`,
      ],
      { stdio: "ignore" },
    );
    const seen = { naive: new Set<string>(), contract: new Set<string>(), view: new Set<string>() };
    try {
      const view = await openSafeRoot(root);
      for (let i = 0; i < 3000; i++) {
        seen.naive.add(await readFile(join(root, "a", "f"), "utf8").catch(() => "-"));
        seen.contract.add((await readTargetFile(root, "a/f")) ?? "-");
        seen.view.add(await view.readText(["a", "f"], 1024).catch(() => "-"));
        if (i > 500 && seen.naive.has("SECRET") && seen.contract.has("inside") && seen.view.has("inside"))
          break;
      }
    } finally {
      swapper.kill("SIGKILL");
    }
    expect(seen.naive.has("SECRET"), "the swap never raced a read: the test proved nothing").toBe(true);
    expect(seen.contract.has("SECRET")).toBe(false);
    expect(seen.view.has("SECRET")).toBe(false);
    expect(seen.contract.has("inside") || seen.view.has("inside")).toBe(true);
  });
});
