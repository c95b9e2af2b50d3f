import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

/**
 * docs/reference/trainers.md's Python examples are the files `npm run conformance` runs (issue #27): a block
 * that defines a function or class appears line for line in an example file; a usage block calls
 * only functions those files (or the adapters) define. Comments are left out of the comparison.
 */

const FILES = ["examples/trainers", "examples/grpo-tiny", "adapters/python"].flatMap((d) =>
  readdirSync(join(REPO_ROOT, d))
    .filter((f) => f.endsWith(".py"))
    .map((f) => ({ path: `${d}/${f}`, text: readFileSync(join(REPO_ROOT, d, f), "utf8") })),
);

/** Python code lines without comments, blank lines or trailing spaces. Pure. */
export function codeLines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.replace(/\s+#.*$/, "").trimEnd())
    .filter((l) => l.trim() !== "" && !l.trim().startsWith("#"));
}

/** The ```python blocks of a Markdown text. Pure. */
export function pythonBlocks(md: string): string[] {
  return [...md.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** Whether `lines` occur contiguously in `file`. Pure. */
export function containsLines(file: string[], lines: string[]): boolean {
  return file.some((_, i) => lines.every((l, k) => file[i + k] === l));
}

const BUILTINS = new Set(["print", "len", "range", "zip", "dict", "list", "isinstance", "super", "type"]);

/** The lower-case names a block calls that no example or adapter file defines. Pure. */
export function undefinedCalls(block: string, files: readonly string[]): string[] {
  const calls = new Set(
    [
      ...codeLines(block)
        .join("\n")
        .matchAll(/(?<![.\w])([a-z_][a-z0-9_]*)\(/g),
    ].map((m) => m[1]!),
  );
  return [...calls].filter((c) => !BUILTINS.has(c) && !files.some((f) => f.includes(`def ${c}(`)));
}

describe("docs/reference/trainers.md examples are the runnable files", () => {
  it("pure helpers", () => {
    expect(codeLines("a = 1  # one\n# note\n\n  b(a)\n")).toEqual(["a = 1", "  b(a)"]);
    expect(containsLines(["x", "a", "b"], ["a", "b"])).toBe(true);
    expect(containsLines(["a", "x", "b"], ["a", "b"])).toBe(false);
    expect(undefinedCalls("out = foo(bar(1), obj.baz(2))", ["def foo(x):"])).toEqual(["bar"]);
  });

  const blocks = pythonBlocks(readFileSync(join(REPO_ROOT, "docs/reference/trainers.md"), "utf8"));
  it("has Python examples", () => expect(blocks.length).toBeGreaterThanOrEqual(6));
  for (const [i, block] of blocks.entries()) {
    it(`block ${i + 1}: ${codeLines(block)[0]}`, () => {
      const lines = codeLines(block);
      if (lines.some((l) => /^(def|class|async def) /.test(l))) {
        const hit = FILES.find((f) => containsLines(codeLines(f.text), lines));
        expect(hit, `no example file holds this block:\n${lines.join("\n")}`).toBeDefined();
      } else {
        expect(
          undefinedCalls(
            block,
            FILES.map((f) => f.text),
          ),
        ).toEqual([]);
      }
    });
  }
});

describe("examples/grpo-tiny without torch", () => {
  const python = spawnSync("python3", ["--version"]).status === 0;
  if (!python) console.log("examples/grpo-tiny unit tests skipped: no python3 on PATH");
  it.skipIf(!python)(
    "its pure parts (trained runs, messages, the certainty term) pass their unittest",
    () => {
      const r = spawnSync("python3", ["-m", "unittest", "-v", "test_grpo_tiny"], {
        cwd: join(REPO_ROOT, "examples/grpo-tiny"),
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
      });
      expect(r.status, r.stderr).toBe(0);
      // every test of the file ran (none skipped or lost to an import error)
      const defined = readFileSync(join(REPO_ROOT, "examples/grpo-tiny/test_grpo_tiny.py"), "utf8").match(
        /^ {4}def test_/gm,
      )!.length;
      expect(r.stderr).toMatch(new RegExp(`Ran ${defined} tests`));
    },
  );
});
