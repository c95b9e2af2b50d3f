import { describe, expect, it } from "vitest";
import { parseReach } from "../../src/scoring/build-reach.js";
import { C_KEPT_MARK, droppedCLines, parseKeptLines } from "../../src/scoring/c-kept-lines.js";

const newFile = (path: string, lines: string[]) =>
  `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}\n`).join("")}`;
const kept = (entries: Record<string, number[]>) =>
  new Map(Object.entries(entries).map(([p, ls]) => [p, new Set(ls)]));
const where = (diff: string, k: Map<string, Set<number>>) =>
  droppedCLines(diff, k).map((h) => `${h.file}:${h.line}`);

describe("parseKeptLines", () => {
  it("keeps the workspace's files (relative, normalised) and drops everything outside it", () => {
    const section =
      "/ws/src/a.c\t3\n/ws/./inc/../inc/h.h\t2\n/usr/include/stdio.h\t40\n/wsx/b.c\t1\ngarbage\n";
    expect(parseKeptLines(section, "/ws")).toEqual(kept({ "src/a.c": [3], "inc/h.h": [2] }));
  });
  it("is read by parseReach after its marker, the paths before it untouched", () => {
    const out = `/ws\nsrc/a.c\n\n${C_KEPT_MARK}\n/ws/src/a.c\t1\n`;
    const r = parseReach(out);
    expect([...r.files]).toEqual(["src/a.c"]);
    expect(r.cKept).toEqual(kept({ "src/a.c": [1] }));
  });
});

describe("droppedCLines", () => {
  const lines = [
    "int a;", // 1
    "#ifdef NEVER", // 2
    "this is not C;", // 3
    "#endif", // 4
    "", // 5
    "/* a comment", // 6
    "   spanning */", // 7
  ];
  it("names each added code line the preprocessor skipped, never a directive or a blank", () => {
    expect(where(newFile("src/a.c", lines), kept({ "src/a.c": [1, 6, 7] }))).toEqual(["src/a.c:3"]);
  });
  it("judges nothing in a file the compiler did not read (left to the file-level reach)", () => {
    expect(where(newFile("src/a.c", lines), kept({ "src/b.c": [1] }))).toEqual([]);
  });
  it("a directive's continuation lines are not code (the preprocessor joins them to the directive)", () => {
    const macro = ["#define TWICE(a) \\", "  ((a) + \\", "   (a))", "int b;"];
    expect(where(newFile("inc/h.h", macro), kept({ "inc/h.h": [1, 4] }))).toEqual([]);
  });
  it("an added line directive is named wherever it is: it rewrites the markers read here", () => {
    const forged = ["int a;", "#line 1", '# 7 "src/a.c"', "#  line 9"];
    expect(where(newFile("src/a.c", forged), kept({}))).toEqual(["src/a.c:2", "src/a.c:3", "src/a.c:4"]);
  });
  it("only C and C++ sources and headers are judged", () => {
    expect(where(newFile("README.md", ["text"]), kept({ "README.md": [] }))).toEqual([]);
  });
  it("an edited file: line numbers from the hunk, context lines never judged", () => {
    const diff =
      "diff --git a/src/a.c b/src/a.c\n--- a/src/a.c\n+++ b/src/a.c\n@@ -10,2 +10,4 @@\n int x;\n+#if 2 < 1\n+bad;\n+#endif\n int y;\n";
    expect(where(diff, kept({ "src/a.c": [10, 14] }))).toEqual(["src/a.c:12"]);
  });
});
