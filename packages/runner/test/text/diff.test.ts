import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { dropPaths, postImageByFile, splitDiff, touchedPaths, unquoteGitPath } from "../../src/text/diff.js";
import { parseUnifiedDiff } from "../../src/text/unified-diff.js";

const DIFF = `diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,3 @@
-fn a() {}
+fn a() { b() }
diff --git a/tests/gauge.rs b/tests/gauge.rs
index 3333333..4444444 100644
--- a/tests/gauge.rs
+++ b/tests/gauge.rs
@@ -1 +1 @@
-assert!(x);
+assert!(true);
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..5555555
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 6666666..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/a b.txt b/a b.txt
index 7777777..8888888 100644
--- a/a b.txt
+++ b/a b.txt
@@ -1 +1 @@
-x
+y
`;

describe("splitDiff", () => {
  it("splits per file with old/new paths, new and deleted files, and paths with spaces", () => {
    const files = splitDiff(DIFF);
    expect(files.map((f) => [f.oldPath, f.newPath])).toEqual([
      ["src/lib.rs", "src/lib.rs"],
      ["tests/gauge.rs", "tests/gauge.rs"],
      [undefined, "new.txt"],
      ["old.txt", undefined],
      ["a b.txt", "a b.txt"],
    ]);
    expect(files.map((f) => f.text).join("")).toBe(DIFF);
  });

  it("reads renames and quoted paths", () => {
    const d = `diff --git a/x.py b/y.py
similarity index 100%
rename from x.py
rename to y.py
diff --git "a/q\\"uote.txt" "b/q\\"uote.txt"
index 1..2 100644
--- "a/q\\"uote.txt"
+++ "b/q\\"uote.txt"
@@ -1 +1 @@
-a
+b
`;
    expect(splitDiff(d).map((f) => [f.oldPath, f.newPath])).toEqual([
      ["x.py", "y.py"],
      ['q"uote.txt', 'q"uote.txt'],
    ]);
  });

  it("an empty diff has no files", () => {
    expect(splitDiff("")).toEqual([]);
    expect(touchedPaths("")).toEqual([]);
  });
});

describe("dropPaths", () => {
  it("removes the sections touching hidden test files and records them", () => {
    const r = dropPaths(DIFF, ["tests/gauge.rs", "./old.txt", "tests/other.rs"]);
    expect(r.droppedPaths).toEqual(["old.txt", "tests/gauge.rs"]);
    expect(r.keptPaths).toEqual(["a b.txt", "new.txt", "src/lib.rs"]);
    expect(r.diff).not.toContain("tests/gauge.rs");
    expect(r.diff).toContain("+fn a() { b() }");
    expect(splitDiff(r.diff)).toHaveLength(3);
  });

  it("drops a file that takes a hidden file's place: under its path, where its directory must go, or its temp name", () => {
    const nf = (path: string) =>
      `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1 @@\n+x\n`;
    const diff = [
      nf("tests/test_a.py/x"),
      nf("tests/unit"),
      nf("tests/unit_helpers.py"),
      nf("tests/test_a.pyc"),
      nf("tests/test_a.py.tmp/x"),
    ].join("");
    const r = dropPaths(diff, ["tests/test_a.py", "tests/unit/test_b.py"]);
    expect(r.droppedPaths).toEqual(["tests/test_a.py.tmp/x", "tests/test_a.py/x", "tests/unit"]);
    expect(r.keptPaths).toEqual(["tests/test_a.pyc", "tests/unit_helpers.py"]);
  });

  it("leaves a diff untouched when no protected path is hit", () => {
    const r = dropPaths(DIFF, ["nope"]);
    expect(r.diff).toBe(DIFF);
    expect(r.droppedPaths).toEqual([]);
  });
});

describe("git's own path quoting (one reader for the scorer's split and the patch parser)", () => {
  it("unquotes C escapes and octal bytes as UTF-8", () => {
    expect(unquoteGitPath('"caf\\303\\251.txt"')).toBe("café.txt");
    expect(unquoteGitPath('"ta\\tb\\\\c\\"d"')).toBe('ta\tb\\c"d');
    expect(unquoteGitPath("plain name.txt")).toBe("plain name.txt");
  });

  it("reads back every path of a real git diff: octal-escaped, quoted, tab, space (with git's trailing tab), rename", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fg-diff-quote-"));
    try {
      const names = ["café.txt", 'q"uote.txt', "ta\tb.txt", "sp ace.txt", "日本.md"];
      const git = (...args: string[]) =>
        execa("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd: dir, timeout: 30_000 });
      await git("init", "-q");
      for (const n of names) await writeFile(join(dir, n), "a\n");
      await git("add", "-A");
      await git("commit", "-qm", "base");
      for (const n of names) await writeFile(join(dir, n), "a\nb\n");
      await git("mv", "sp ace.txt", "sp ace 2.txt");
      const diff = (await git("diff", "HEAD")).stdout;
      expect(diff).toContain('"a/caf\\303\\251.txt"');
      const expected = [
        ["café.txt", "café.txt"],
        ['q"uote.txt', 'q"uote.txt'],
        ["sp ace.txt", "sp ace 2.txt"],
        ["ta\tb.txt", "ta\tb.txt"],
        ["日本.md", "日本.md"],
      ];
      const sort = (xs: (string | null | undefined)[][]) =>
        xs.sort((x, y) => String(x[0]).localeCompare(String(y[0])));
      expect(sort(splitDiff(`${diff}\n`).map((f) => [f.oldPath, f.newPath]))).toEqual(sort(expected));
      expect(sort(parseUnifiedDiff(`${diff}\n`).map((f) => [f.oldPath, f.newPath]))).toEqual(sort(expected));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("postImageByFile", () => {
  it("the new side of each file's hunks, whole only for a new file; a deleted file has none", () => {
    const diff = [
      "diff --git a/t/a.js b/t/a.js",
      "--- a/t/a.js",
      "+++ b/t/a.js",
      "@@ -1,2 +1,2 @@",
      " keep",
      "-old",
      "+new",
      "diff --git a/t/b.js b/t/b.js",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/t/b.js",
      "@@ -0,0 +1 @@",
      "+++i;",
      "diff --git a/t/c.js b/t/c.js",
      "deleted file mode 100644",
      "--- a/t/c.js",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-gone",
      "",
    ].join("\n");
    expect(postImageByFile(diff)).toEqual([
      { path: "t/a.js", text: "keep\nnew\n", whole: false },
      { path: "t/b.js", text: "++i;\n", whole: true },
    ]);
  });
});
