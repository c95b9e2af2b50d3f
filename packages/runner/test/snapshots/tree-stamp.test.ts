import { chmod, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isDigestExempt, treeStamp } from "../../src/snapshots/tree-stamp.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-tree-stamp-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A small snapshot-like tree with fixed times. */
async function tree(name: string): Promise<string> {
  const root = join(dir, name);
  const t = new Date("2026-01-01T00:00:00Z");
  await mkdir(join(root, "workspace", ".git", "logs"), { recursive: true });
  await mkdir(join(root, "deps"), { recursive: true });
  await writeFile(join(root, "workspace", "a.js"), "export const a = 1;\n");
  await writeFile(join(root, "workspace", ".git", "index"), "stat cache");
  await writeFile(join(root, "workspace", ".git", "logs", "HEAD"), "reflog");
  await symlink("a.js", join(root, "workspace", "link.js"));
  for (const f of ["workspace/a.js", "workspace/.git/index", "workspace/.git/logs/HEAD"])
    await utimes(join(root, f), t, t);
  return root;
}

describe("treeStamp (a snapshot tree's stamp that run.json keeps)", () => {
  it("is the same for the same tree and moves with an edit, a mode, a symlink target or a new file", async () => {
    const root = await tree("t1");
    const first = await treeStamp(root);
    expect(first).toMatch(/^stat-sha256:[0-9a-f]{64}$/);
    expect(await treeStamp(root)).toBe(first);
    const stamps = [first];
    await writeFile(join(root, "workspace", "a.js"), "export const a = 2;\n");
    stamps.push(await treeStamp(root));
    await chmod(join(root, "workspace", "a.js"), 0o755);
    stamps.push(await treeStamp(root));
    await rm(join(root, "workspace", "link.js"));
    await symlink("b.js", join(root, "workspace", "link.js"));
    stamps.push(await treeStamp(root));
    await writeFile(join(root, "deps", "new"), "");
    stamps.push(await treeStamp(root));
    expect(new Set(stamps).size).toBe(stamps.length);
  });

  it("leaves git's index and reflogs out (reading the tree may rewrite them), nothing else", async () => {
    const root = await tree("t2");
    const first = await treeStamp(root);
    await writeFile(join(root, "workspace", ".git", "index"), "refreshed stat cache");
    await writeFile(join(root, "workspace", ".git", "logs", "HEAD"), "more reflog");
    expect(await treeStamp(root)).toBe(first);
    expect(isDigestExempt("workspace/.git/index")).toBe(true);
    expect(isDigestExempt("workspace/.git/logs/refs/heads/main")).toBe(true);
    expect(isDigestExempt("workspace/.git/HEAD")).toBe(false);
    expect(isDigestExempt("workspace/src/.git/indexes.js")).toBe(false);
    expect(isDigestExempt("workspace/index")).toBe(false);
  });
});
