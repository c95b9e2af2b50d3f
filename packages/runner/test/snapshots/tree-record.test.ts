import { execFileSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  changedPaths,
  checkTree,
  isRecordExempt,
  readTreeRecord,
  recordTree,
  TREE_RECORD_FILE,
  treeRecordOf,
} from "../../src/snapshots/tree-record.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-tree-record-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, stdio: "pipe" })
    .toString()
    .trim();

/** A snapshot cache entry: `<entry>/tree/{workspace (a git repository), deps}`. */
async function entry(name: string): Promise<string> {
  const d = join(dir, name);
  const ws = join(d, "tree", "workspace");
  await mkdir(join(d, "tree", "deps"), { recursive: true });
  await mkdir(ws, { recursive: true });
  await writeFile(join(ws, "a.js"), "export const a = 1;\n");
  await writeFile(join(d, "tree", "deps", "pkg.txt"), "dep\n");
  await symlink("a.js", join(ws, "link.js"));
  git(ws, "init", "-q");
  git(ws, "add", "-A");
  git(ws, "commit", "-q", "-m", "base");
  return d;
}

describe("tree record (a snapshot tree's content, checked on --resume)", () => {
  it("git freshening the base objects through alternates (what every trajectory's diff does) changes times, not the digest", async () => {
    const d = await entry("fresh");
    const record = await recordTree(d);
    expect(record.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // the diff's repository of ours: its objects come from the snapshot's through alternates
    const ours = join(dir, "ours.git");
    git(dir, "init", "-q", "--bare", ours);
    await writeFile(
      join(ours, "objects", "info", "alternates"),
      `${join(d, "tree", "workspace", ".git", "objects")}\n`,
    );
    const blob = git(d, "hash-object", "tree/workspace/a.js");
    const obj = join(d, "tree", "workspace", ".git", "objects", blob.slice(0, 2), blob.slice(2));
    const past = new Date("2026-01-01T00:00:00Z");
    await utimes(obj, past, past);
    const before = await checkTree(d, record);
    expect(before.changed).toEqual([]);
    git(ours, "hash-object", "-w", join(d, "tree", "workspace", "a.js"));
    expect((await stat(obj)).mtimeMs).toBeGreaterThan(past.getTime()); // freshened in the snapshot's tree
    const after = await checkTree(d, record);
    expect(after).toEqual({ digest: record.digest, changed: [] });
    // the record took the new time (content the same): the next check hashes nothing again
    const kept = await readTreeRecord(d);
    expect(kept?.digest).toBe(record.digest);
    const rel = `workspace/.git/objects/${blob.slice(0, 2)}/${blob.slice(2)}`;
    expect(kept?.entries[rel]?.[4]).toBe((await stat(obj, { bigint: true })).mtimeNs.toString());
  });

  it("an edit, a mode, a symlink target, a new or removed file: each named", async () => {
    const d = await entry("edits");
    const record = await recordTree(d);
    const ws = join(d, "tree", "workspace");
    await writeFile(join(ws, "a.js"), "export const a = 2;\n"); // same size, new time
    await chmod(join(d, "tree", "deps", "pkg.txt"), 0o755);
    await rm(join(ws, "link.js"));
    await symlink("b.js", join(ws, "link.js"));
    await writeFile(join(d, "tree", "deps", "new"), "");
    const c = await checkTree(d, record);
    expect(c.changed).toEqual(["deps/new", "deps/pkg.txt", "workspace/a.js", "workspace/link.js"]);
    expect(c.digest).not.toBe(record.digest);
    await rm(join(d, "tree", "deps", "new"));
    await rm(join(ws, "a.js"));
    expect((await checkTree(d, record)).changed).toContain("workspace/a.js");
    // a failed check leaves the record as it was built
    expect((await readTreeRecord(d))?.digest).toBe(record.digest);
  });

  it("git's index and reflogs are left out (reading the tree may rewrite them)", async () => {
    const d = await entry("exempt");
    const record = await recordTree(d);
    await writeFile(join(d, "tree", "workspace", ".git", "index"), "refreshed stat cache");
    expect((await checkTree(d, record)).changed).toEqual([]);
    expect(isRecordExempt("workspace/.git/index")).toBe(true);
    expect(isRecordExempt("workspace/.git/logs/refs/heads/main")).toBe(true);
    expect(isRecordExempt("workspace/.git/HEAD")).toBe(false);
    expect(isRecordExempt("workspace/src/.git/indexes.js")).toBe(false);
  });

  it("an entry without a record (older cache) is recorded once on first use; a torn record is made again", async () => {
    const d = await entry("lazy");
    const first = await treeRecordOf(d);
    expect(JSON.parse(await readFile(join(d, TREE_RECORD_FILE), "utf8")).digest).toBe(first.digest);
    expect((await treeRecordOf(d)).digest).toBe(first.digest);
    await writeFile(join(d, TREE_RECORD_FILE), '{"version":1,"dig');
    expect((await treeRecordOf(d)).digest).toBe(first.digest);
  });

  it("changedPaths: added, removed and changed paths, sorted; times alone are no change", () => {
    const f = (sha: string, mtime = "1") =>
      ["f", 0o644, sha, 1, mtime] as ["f", number, string, number, string];
    expect(
      changedPaths({ a: f("1"), b: f("2"), c: f("3") }, { a: f("1", "9"), c: f("x"), d: f("4") }),
    ).toEqual(["b", "c", "d"]);
  });
});
