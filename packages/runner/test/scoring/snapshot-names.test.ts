import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  SNAPSHOT_NAMES_LIMITS,
  snapshotNames,
  snapshotNamesCached,
} from "../../src/scoring/snapshot-names.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "flakegym-names-"));
  dirs.push(root);
  for (const [p, t] of Object.entries(files)) {
    await mkdir(dirname(join(root, p)), { recursive: true });
    await writeFile(join(root, p), t);
  }
  return root;
}

describe("snapshotNames: what the task's snapshot already names", () => {
  it("code files' names and numbers (not their comments or strings), every path part; .git and symlinks skipped", async () => {
    const outside = await tree({ "lib.py": "outside_name = 1\n" });
    const root = await tree({
      "pkg/fmt.py": 'def format_size(n):  # comment_word\n    return n / 1024, "string_word"\n',
      "cmd/main.go": "package main\n\nfunc Run() {}\n",
      "README.md": "readme_word\n",
      ".git/hooks/h.py": "git_word = 1\n",
    });
    await symlink(join(outside, "lib.py"), join(root, "pkg/linked.py"));
    await symlink(outside, join(root, "linked_dir"));
    const r = await snapshotNames(root, new AbortController().signal);
    for (const n of [
      "format_size",
      "n",
      "1024",
      "Run",
      "main",
      "pkg",
      "fmt.py",
      "fmt",
      "cmd",
      "README.md",
      "README",
    ])
      expect(r.names, n).toContain(n);
    for (const n of [
      "comment_word",
      "string_word",
      "readme_word",
      "git_word",
      "outside_name",
      "linked.py",
      "linked_dir",
    ])
      expect(r.names, n).not.toContain(n);
    expect(r).toMatchObject({ files: 2, truncated: false });
  });
  it("bounded: past the file limit, or once its signal is aborted, it returns what it read, marked truncated", async () => {
    const root = await tree({ "a.py": "alpha = 1\n", "b.py": "beta = 2\n", "c.py": "gamma = 3\n" });
    const r = await snapshotNames(root, new AbortController().signal, {
      ...SNAPSHOT_NAMES_LIMITS,
      maxFiles: 2,
    });
    expect(r).toMatchObject({ files: 2, truncated: true });
    const few = await snapshotNames(root, new AbortController().signal, {
      ...SNAPSHOT_NAMES_LIMITS,
      maxEntries: 0,
    });
    expect(few).toMatchObject({ files: 0, truncated: true });
    const aborted = AbortSignal.abort();
    expect(await snapshotNames(root, aborted)).toMatchObject({ files: 0, truncated: true });
    const cut = await snapshotNames(root, new AbortController().signal, {
      ...SNAPSHOT_NAMES_LIMITS,
      maxFileBytes: 3,
    });
    expect(cut.names).toContain("alp");
    expect(cut.names).not.toContain("alpha");
  });
  it("walked once per snapshot: the cached walk is the same", async () => {
    const root = await tree({ "a.py": "alpha = 1\n" });
    const first = snapshotNamesCached(root);
    expect(snapshotNamesCached(root)).toBe(first);
    expect((await first).names).toContain("alpha");
  });
});
