import { describe, expect, it } from "vitest";
import {
  extendedHeader,
  filePatchOf,
  hunkHeader,
  PatchParseError,
  parseUnifiedDiff,
  readHunk,
  sidePaths,
} from "../../src/text/unified-diff.js";

const draft = (over: Partial<Parameters<typeof filePatchOf>[0]> = {}) => ({
  oldPath: "a.txt" as string | null | undefined,
  newPath: "a.txt" as string | null | undefined,
  added: false,
  deleted: false,
  renamed: false,
  binary: false,
  hunks: [],
  ...over,
});

describe("parseUnifiedDiff's line kinds", () => {
  it("hunkHeader reads both ranges, a missing count is 1, anything else is no header", () => {
    expect(hunkHeader("@@ -3,4 +5,6 @@ def f():")).toEqual({
      oldStart: 3,
      oldLines: 4,
      newStart: 5,
      newLines: 6,
    });
    expect(hunkHeader("@@ -1 +1 @@")).toEqual({ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1 });
    expect(hunkHeader("@@ -0,0 +1,2 @@")).toMatchObject({ oldLines: 0, newLines: 2 });
    expect(hunkHeader("@@ x1 +1 @@")).toBeUndefined();
  });

  it("readHunk reads to both counts, marks a missing final newline per side, and stops there", () => {
    const lines = ["-old", "\\ No newline at end of file", "+new", "\\ No newline at end of file", " next"];
    const { hunk, next } = readHunk(lines, 0, "@@ -1 +1 @@", hunkHeader("@@ -1 +1 @@")!);
    expect(next).toBe(4);
    expect(hunk).toEqual({
      oldStart: 1,
      oldLines: 1,
      newStart: 1,
      newLines: 1,
      lines: [
        { op: "-", text: "old" },
        { op: "+", text: "new" },
      ],
      oldNoNewline: true,
      newNoNewline: true,
    });
    // a marker after context applies to both sides; an empty line is empty context
    const ctx = readHunk(["", " x", "\\ No newline"], 0, "@@ -1,2 +1,2 @@", hunkHeader("@@ -1,2 +1,2 @@")!);
    expect(ctx.hunk.lines).toEqual([
      { op: " ", text: "" },
      { op: " ", text: "x" },
    ]);
    expect(ctx.hunk).toMatchObject({ oldNoNewline: true, newNoNewline: true });
  });

  it("readHunk names the line of a stray line and of a hunk the diff ends inside", () => {
    const h = hunkHeader("@@ -1,2 +1,2 @@")!;
    expect(() => readHunk([" a", "!b"], 0, "@@ -1,2 +1,2 @@", h)).toThrow(
      new PatchParseError("unexpected line in hunk: '!b'", 2),
    );
    expect(() => readHunk([" a"], 0, "@@ -1,2 +1,2 @@", h)).toThrow(
      /patch line 1: hunk '@@ -1,2 \+1,2 @@' is truncated \(old 1\/2, new 1\/2 lines\)/,
    );
  });

  it("sidePaths and extendedHeader say what each header line tells about its file", () => {
    expect(sidePaths("--- /dev/null", "+++ b/new.txt")).toEqual({
      oldPath: null,
      newPath: "new.txt",
      added: true,
    });
    expect(sidePaths("--- a/old.txt", "+++ /dev/null")).toEqual({
      oldPath: "old.txt",
      newPath: null,
      deleted: true,
    });
    expect(extendedHeader("new file mode 100644")).toEqual({ added: true });
    expect(extendedHeader("deleted file mode 100644")).toEqual({ deleted: true });
    expect(extendedHeader('rename from "sp ace.txt"')).toEqual({ renamed: true, oldPath: "sp ace.txt" });
    expect(extendedHeader("rename to b.txt")).toEqual({ renamed: true, newPath: "b.txt" });
    expect(extendedHeader("Binary files a/x and b/x differ")).toEqual({ binary: true });
    expect(extendedHeader("GIT binary patch")).toEqual({ binary: true });
    expect(extendedHeader("index 1234..5678 100644")).toEqual({});
  });

  it("filePatchOf decides add, delete, rename and modify from the headers", () => {
    expect(filePatchOf(draft())).toMatchObject({ kind: "modify", oldPath: "a.txt", newPath: "a.txt" });
    expect(filePatchOf(draft({ added: true }))).toMatchObject({ kind: "add", oldPath: null });
    expect(filePatchOf(draft({ oldPath: undefined }))).toMatchObject({ kind: "add", oldPath: null });
    expect(filePatchOf(draft({ newPath: null }))).toMatchObject({ kind: "delete", newPath: null });
    expect(filePatchOf(draft({ newPath: "b.txt" }))).toMatchObject({ kind: "rename", newPath: "b.txt" });
    expect(filePatchOf(draft({ renamed: true }))).toMatchObject({ kind: "rename" });
  });

  it("parseUnifiedDiff: a git diff of several files after a preamble, and a plain diff", () => {
    const git = [
      "commit message, ignored",
      "diff --git a/a.txt b/a.txt",
      "index 1..2 100644",
      "--- a/a.txt",
      "+++ b/a.txt",
      "@@ -1 +1 @@",
      "-x",
      "+y",
      "diff --git a/old.bin b/new.bin",
      "similarity index 90%",
      "rename from old.bin",
      "rename to new.bin",
      "Binary files a/old.bin and b/new.bin differ",
      "",
    ].join("\n");
    expect(parseUnifiedDiff(git)).toEqual([
      {
        kind: "modify",
        oldPath: "a.txt",
        newPath: "a.txt",
        binary: false,
        // the hunk is read by readHunk (tested above): here only that it lands on its file
        hunks: [readHunk(["-x", "+y"], 0, "@@ -1 +1 @@", hunkHeader("@@ -1 +1 @@")!).hunk],
      },
      { kind: "rename", oldPath: "old.bin", newPath: "new.bin", binary: true, hunks: [] },
    ]);
    // plain diffs: a second ---/+++ pair after a hunk starts the next file
    const plain = "--- a/p\n+++ b/p\n@@ -1 +1 @@\n-1\n+2\n--- /dev/null\n+++ b/q\n@@ -0,0 +1 @@\n+q\n";
    expect(parseUnifiedDiff(plain).map((f) => [f.kind, f.oldPath, f.newPath])).toEqual([
      ["modify", "p", "p"],
      ["add", null, "q"],
    ]);
    expect(() => parseUnifiedDiff("@@ -1 +1 @@\n-x\n+y\n")).toThrow(/patch line 1: bad hunk header/);
  });
});
