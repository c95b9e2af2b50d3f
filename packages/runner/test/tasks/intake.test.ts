import { describe, expect, it } from "vitest";
import type { RowError } from "../../src/tasks/dataset-row.js";
import { formatReasonTable, groupByReason, reasonKey } from "../../src/tasks/intake.js";

const e = (row: number, field: string, reason: string, id?: string): RowError => ({
  file: "rows.jsonl",
  row,
  field,
  reason,
  ...(id === undefined ? {} : { id }),
});

describe("rejections by reason", () => {
  it("groups by field without its index and by reason without its quoted values", () => {
    expect(reasonKey(e(3, "FAIL_TO_PASS.2", "'a b' is not a pytest node id"))).toBe(
      "FAIL_TO_PASS: '…' is not a pytest node id",
    );
    expect(reasonKey(e(4, "repo", "local repository /m/a/b does not exist; clone it"))).toBe(
      "repo: local repository … does not exist; clone it",
    );
    // a quoted column name is advice, kept; a quoted value is blanked
    expect(
      reasonKey(e(5, "test_patch", "no language: name it in a 'language' column (supported: python)")),
    ).toBe("test_patch: no language: name it in a 'language' column (supported: python)");
    expect(reasonKey(e(6, "version", "'9.9' is not a version of a/b: set 'version' to one of them"))).toBe(
      "version: '…' is not a version of a/b: set 'version' to one of them",
    );
    expect(reasonKey(e(9, "instance_id", "duplicate task id 'x' (first seen in row 4)"))).toBe(
      "instance_id: duplicate task id '…' (first seen in row N)",
    );
    // an apostrophe inside a word quotes nothing
    expect(reasonKey(e(2, "task.toml", "uses Harbor's workdir/ upload, not Ubuntu's"))).toBe(
      "task.toml: uses Harbor's workdir/ upload, not Ubuntu's",
    );
  });

  it("shows a reason only one row has whole, a shared one as its kind", () => {
    const table = formatReasonTable(
      groupByReason([
        e(7, "FAIL_TO_PASS.0", "'test_x' is not a SymPy test name", "s-7"),
        e(1, "base_commit", "'abc' is not a full commit id"),
        e(2, "base_commit", "'def' is not a full commit id"),
      ]),
    );
    expect(table).toContain("    1  FAIL_TO_PASS: 'test_x' is not a SymPy test name");
    expect(table).toContain("    2  base_commit: '…' is not a full commit id");
  });

  it("counts each reason, most frequent first, and keeps its first rows", () => {
    const rejected = [
      e(1, "base_commit", "'abc' is not a full commit id (40 hex digits)", "a-1"),
      e(2, "FAIL_TO_PASS.0", "'x y' is not a pytest node id", "b-2"),
      e(5, "base_commit", "'def' is not a full commit id (40 hex digits)", "c-5"),
      e(7, "base_commit", "'0' is not a full commit id (40 hex digits)"),
      e(8, "base_commit", "'1' is not a full commit id (40 hex digits)", "d-8"),
    ];
    const groups = groupByReason(rejected, 2);
    expect(groups.map((g) => [g.count, g.reason, g.first.map((x) => x.row)])).toEqual([
      [4, "base_commit: '…' is not a full commit id (40 hex digits)", [1, 5]],
      [1, "FAIL_TO_PASS: '…' is not a pytest node id", [2]],
    ]);
    expect(formatReasonTable(groups)).toEqual([
      "count  reason (first rows)",
      "    4  base_commit: '…' is not a full commit id (40 hex digits)",
      "         row 1 [a-1], row 5 [c-5], … 2 more",
      "    1  FAIL_TO_PASS: 'x y' is not a pytest node id",
      "         row 2 [b-2]",
    ]);
    expect(formatReasonTable([])).toEqual([]);
  });
});
