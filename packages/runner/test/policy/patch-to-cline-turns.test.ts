import { describe, expect, it } from "vitest";
import { patchToClineTurns } from "../../src/policy/patch-to-cline-turns.js";
import { applyHunks, parseUnifiedDiff } from "../../src/text/unified-diff.js";

const ORIGINAL = [
  "import os",
  "",
  "def a():",
  "    return 1",
  "",
  "def b():",
  "    return 2",
  "",
  "def c():",
  "    return 3",
  "",
].join("\n");

const PATCH = `diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,4 +1,5 @@
 import os
+import sys
 
 def a():
     return 1
@@ -8,3 +9,3 @@ def b():
 
 def c():
-    return 3
+    return 30
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+text
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 4444444..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/a name.txt b/moved/b.txt
similarity index 100%
rename from a name.txt
rename to moved/b.txt
`;

const argsOf = (t: ReturnType<typeof patchToClineTurns>[number]) =>
  "tool_calls" in t ? t.tool_calls[0]! : undefined;

describe("parseUnifiedDiff / applyHunks", () => {
  it("parses modified, added, deleted and renamed files", () => {
    const files = parseUnifiedDiff(PATCH);
    expect(files.map((f) => [f.kind, f.oldPath, f.newPath, f.hunks.length])).toEqual([
      ["modify", "src/app.py", "src/app.py", 2],
      ["add", null, "docs/new.md", 1],
      ["delete", "old.txt", null, 1],
      ["rename", "a name.txt", "moved/b.txt", 0],
    ]);
    expect(applyHunks(ORIGINAL, files[0]!.hunks)).toBe(
      ORIGINAL.replace("import os\n", "import os\nimport sys\n").replace("return 3", "return 30"),
    );
    expect(applyHunks("", files[1]!.hunks)).toBe("# New\ntext\n");
  });

  it("keeps 'no newline at end of file' and rejects truncated hunks with the line", () => {
    const p =
      "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n";
    const [f] = parseUnifiedDiff(p);
    expect(applyHunks("a", f!.hunks)).toBe("b");
    expect(() => parseUnifiedDiff("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n")).toThrow(
      /patch line \d+: hunk '@@ -1,3 \+1,3 @@' is truncated/,
    );
  });
});

describe("patchToClineTurns", () => {
  it("maps each file to one Cline tool turn and ends with attempt_completion", () => {
    const turns = patchToClineTurns(PATCH);
    expect(turns.map((t) => argsOf(t)?.name)).toEqual([
      "replace_in_file",
      "write_to_file",
      "execute_command",
      "execute_command",
      "attempt_completion",
    ]);
    expect(argsOf(turns[0]!)!.arguments).toEqual({
      path: "src/app.py",
      diff: [
        "------- SEARCH",
        "import os",
        "",
        "def a():",
        "    return 1",
        "=======",
        "import os",
        "import sys",
        "",
        "def a():",
        "    return 1",
        "+++++++ REPLACE",
        "------- SEARCH",
        "",
        "def c():",
        "    return 3",
        "=======",
        "",
        "def c():",
        "    return 30",
        "+++++++ REPLACE",
      ].join("\n"),
    });
    expect(argsOf(turns[1]!)!.arguments).toEqual({ path: "docs/new.md", content: "# New\ntext\n" });
    expect(argsOf(turns[2]!)!.arguments).toEqual({ command: "rm -f -- old.txt", requires_approval: "false" });
    expect(argsOf(turns[3]!)!.arguments).toEqual({
      command: "mkdir -p moved && mv -- 'a name.txt' moved/b.txt",
      requires_approval: "false",
    });
    expect(argsOf(turns[4]!)!.arguments.result).toMatch(/4 files/);
  });

  it("rewrites a file whole when a SEARCH block would land on an earlier copy of its text", () => {
    const original = "x = 1\nreturn x\n\nx = 1\nreturn x\n";
    const patch = "--- a/f.py\n+++ b/f.py\n@@ -4,2 +4,2 @@\n x = 1\n-return x\n+return -x\n";
    const trusting = patchToClineTurns(patch);
    expect(argsOf(trusting[0]!)!.name).toBe("replace_in_file");
    const checked = patchToClineTurns(patch, { originals: { "f.py": original } });
    expect(argsOf(checked[0]!)).toEqual({
      name: "write_to_file",
      arguments: { path: "f.py", content: "x = 1\nreturn x\n\nx = 1\nreturn -x\n" },
    });
    const unique = patchToClineTurns(patch.replace("@@ -4,2 +4,2 @@\n x = 1", "@@ -3,3 +3,3 @@\n \n x = 1"), {
      originals: { "f.py": original },
    });
    expect(argsOf(unique[0]!)!.name).toBe("replace_in_file");
  });

  it("refuses binary changes and context-free hunks it cannot place, naming the file", () => {
    expect(() =>
      patchToClineTurns("diff --git a/i.png b/i.png\nBinary files a/i.png and b/i.png differ\n"),
    ).toThrow(/binary file 'i.png'/);
    expect(() => patchToClineTurns("--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n")).toThrow(
      /'f' with a hunk that has no context/,
    );
    expect(() => patchToClineTurns("just text\n")).toThrow(/contains no file changes/);
  });
});

describe("a patch that makes a file executable", () => {
  it("is replayed with chmod +x after the file's edit (new file mode 100755 / new mode 100755)", () => {
    const patch = [
      "diff --git a/run.sh b/run.sh",
      "new file mode 100755",
      "--- /dev/null",
      "+++ b/run.sh",
      "@@ -0,0 +1 @@",
      "+echo hi",
      "diff --git a/tool b/tool",
      "old mode 100644",
      "new mode 100755",
      "diff --git a/plain.txt b/plain.txt",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/plain.txt",
      "@@ -0,0 +1 @@",
      "+x",
      "",
    ].join("\n");
    const calls = patchToClineTurns(patch).map((t) =>
      "tool_calls" in t ? t.tool_calls[0]! : { name: "", arguments: {} },
    );
    expect(calls.map((c) => [c.name, c.arguments.command ?? c.arguments.path])).toEqual([
      ["write_to_file", "run.sh"],
      ["execute_command", "chmod +x -- run.sh"],
      ["execute_command", "chmod +x -- tool"],
      ["write_to_file", "plain.txt"],
      ["attempt_completion", undefined],
    ]);
  });
});
