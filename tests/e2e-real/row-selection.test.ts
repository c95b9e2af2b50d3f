import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";
import { FAMILY_ROWS, rowFilter } from "./row-selection.js";

const ROWS = join(REPO_ROOT, "tests/e2e-real/swebench-real.jsonl");

describe("FLAKEGYM_E2E_REAL_ROWS (row-selection.ts)", () => {
  it("families: one row of each repository of the file, each named row present under its repository", async () => {
    const rows = (await readFile(ROWS, "utf8"))
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as { instance_id: string; repo: string });
    const repos = [...new Set(rows.map((r) => r.repo))].sort();
    expect(Object.keys(FAMILY_ROWS).sort()).toEqual(repos);
    for (const [repo, id] of Object.entries(FAMILY_ROWS))
      expect(rows.find((r) => r.instance_id === id)?.repo, id).toBe(repo);
    const keep = rowFilter("families")!;
    const kept = rows.filter((r) => keep(r.instance_id)).map((r) => r.repo);
    expect(kept.sort()).toEqual(repos);
  });

  it("unset or blank keeps every row; any other value is a regex over instance ids", () => {
    expect(rowFilter(undefined)).toBeUndefined();
    expect(rowFilter("  ")).toBeUndefined();
    const keep = rowFilter("flask-5014|sympy")!;
    expect(["pallets__flask-5014", "sympy__sympy-13480", "psf__requests-6028"].filter(keep)).toEqual([
      "pallets__flask-5014",
      "sympy__sympy-13480",
    ]);
  });

  it("a bad regex is refused naming the variable and what to write", () => {
    expect(() => rowFilter("sympy(")).toThrow(
      /FLAKEGYM_E2E_REAL_ROWS="sympy\(" is neither 'families' nor a regular expression/,
    );
  });
});
