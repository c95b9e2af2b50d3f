import { describe, expect, it } from "vitest";
import {
  applyFileDiff,
  applyHunks,
  bodyLine,
  extendedHeader,
  filePatchOf,
  hunkHeader,
  hunkStartIndex,
  hunksOf,
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
      header: "@@ -3,4 +5,6 @@",
      oldStart: 3,
      oldLines: 4,
      newStart: 5,
      newLines: 6,
    });
    expect(hunkHeader("@@ -1 +1 @@")).toEqual({
      header: "@@ -1 +1 @@",
      oldStart: 1,
      oldLines: 1,
      newStart: 1,
      newLines: 1,
    });
    expect(hunkHeader("@@ -0,0 +1,2 @@")).toMatchObject({ oldLines: 0, newLines: 2 });
    expect(hunkHeader("@@ x1 +1 @@")).toBeUndefined();
  });

  it("readHunk reads to both counts, marks a missing final newline per side, and stops there", () => {
    const lines = ["-old", "\\ No newline at end of file", "+new", "\\ No newline at end of file", " next"];
    const { hunk, next } = readHunk(lines, 0, "@@ -1 +1 @@", hunkHeader("@@ -1 +1 @@")!);
    expect(next).toBe(4);
    expect(hunk).toEqual({
      header: "@@ -1 +1 @@",
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

describe("one hunk model, read strictly or leniently", () => {
  it("bodyLine: a side's line (an empty line is empty context), the no-newline marker, or neither", () => {
    expect(bodyLine("+x")).toEqual({ op: "+", text: "x" });
    expect(bodyLine("-x")).toEqual({ op: "-", text: "x" });
    expect(bodyLine("")).toEqual({ op: " ", text: "" });
    expect(bodyLine("\\ No newline at end of file")).toBe("no-newline");
    expect(bodyLine("index 12..34")).toBeUndefined();
  });

  it("hunksOf reads a section into the strict reader's model, ignoring counts and skipping stray lines", () => {
    // the header claims 5 old lines; the lenient reader takes what is there, skips "junk" and a bad "@@"
    const text =
      "--- a/x\n+++ b/x\n@@ -2,5 +2,5 @@ fn f\n a\njunk\n-b\n+c\n\\ No newline at end of file\n@@ bad @@\n";
    const hunks = hunksOf(text);
    expect(hunks.map((h) => [h.header, h.oldStart, h.oldLines, h.newStart, h.newLines])).toEqual([
      ["@@ -2,5 +2,5 @@", 2, 5, 2, 5],
    ]);
    expect(hunks[0]!.lines.map((l) => l.op + l.text)).toEqual([" a", "-b", "+c"]);
    // the marker follows an added line: only the new side lacks its final newline
    expect([hunks[0]!.oldNoNewline, hunks[0]!.newNoNewline]).toEqual([false, true]);
    expect(() => parseUnifiedDiff(text)).toThrow(PatchParseError);
  });

  it("hunkStartIndex: git's rule for an insertion-only hunk when strict, the lenient reading's otherwise", () => {
    expect(hunkStartIndex({ oldStart: 5, oldLines: 0 })).toBe(5);
    expect(hunkStartIndex({ oldStart: 5, oldLines: 2 })).toBe(4);
    expect(hunkStartIndex({ oldStart: 5, oldLines: 0 }, true)).toBe(4);
    expect(hunkStartIndex({ oldStart: 0, oldLines: 2 }, true)).toBe(0);
  });

  it("applyHunks lenient: a start past the end fails, the result always ends in a newline", () => {
    const [f] = parseUnifiedDiff("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n");
    expect(applyHunks("a\n", f!.hunks)).toBe("b");
    expect(applyHunks("a\n", f!.hunks, { lenient: true })).toBe("b\n");
    const far = hunksOf("@@ -9,0 +9,1 @@\n+z\n");
    expect(applyHunks("a\n", far)).toBe("a\nz\n");
    expect(() => applyHunks("a\n", far, { lenient: true, path: "x.py" })).toThrow(
      /x\.py: hunk -9 starts past the end of the file \(1 lines\)/,
    );
  });

  it("applyFileDiff is the lenient applier over hunksOf: a mismatch is undefined, no original is an empty file", () => {
    expect(applyFileDiff("a\nb\n", "@@ -2 +2 @@\n-b\n+B\n")).toBe("a\nB\n");
    expect(applyFileDiff("a\n", "@@ -1 +1 @@\n-q\n+c\n")).toBeUndefined();
    expect(applyFileDiff(undefined, "@@ -0,0 +1 @@\n+n\n")).toBe("n\n");
  });
});
