/**
 * The SWE-bench fixture as docs/reference/tasks.md runs it: `tests/fixtures/swebench/minicalc/` copied to
 * `<dir>/minicalc` and committed as a git repository (the same commit as the rows' `base_commit`:
 * the commit is made with fixed author and dates), and `<dir>/rows.jsonl` holding the fixture's
 * first row pointed at it (`repo: file://…`). A fixture directory cannot carry its own `.git`,
 * so this step makes it one. Usage: `npx tsx scripts/swebench-fixture.ts <dir>`; exits 1 naming
 * what went wrong.
 */
import { realpathSync } from "node:fs";
import { cp, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { commitTree } from "../packages/runner/src/tasks/materialize.js";

const FIXTURES = fileURLToPath(new URL("../tests/fixtures/swebench/", import.meta.url));

/** Builds the fixture under `dir`; returns the rows file. */
export async function buildSwebenchFixture(dir: string): Promise<string> {
  const repo = join(dir, "minicalc");
  if (await stat(repo).catch(() => undefined)) {
    throw new Error(`${repo} exists already: give a new directory (or remove it first)`);
  }
  await mkdir(dir, { recursive: true });
  await cp(join(FIXTURES, "minicalc"), repo, { recursive: true });
  const commit = await commitTree(repo);
  const first = (await readFile(join(FIXTURES, "swebench-sample.jsonl"), "utf8")).split("\n")[0]!;
  const row = JSON.parse(first) as { instance_id: string; base_commit: string };
  if (row.base_commit !== commit) {
    throw new Error(
      `the fixture repository committed as ${commit}, but ${row.instance_id} expects base_commit ${row.base_commit}: the fixture's files changed; update the rows of tests/fixtures/swebench/swebench-sample.jsonl`,
    );
  }
  const rows = join(dir, "rows.jsonl");
  await writeFile(rows, `${JSON.stringify({ ...row, repo: pathToFileURL(repo).href })}\n`);
  return rows;
}

// run as a script (argv[1] may be a symlink to this file: compare real paths)
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (!dir) {
    console.error(
      "usage: npx tsx scripts/swebench-fixture.ts <dir>   (a new directory for the repository and rows.jsonl)",
    );
    process.exit(2);
  }
  buildSwebenchFixture(resolve(dir)).then(
    (rows) =>
      console.log(`${rows}: 1 row (minicalc__minicalc-1) over ${resolve(dir, "minicalc")}, a git repository`),
    (err: Error) => {
      console.error(`swebench-fixture: ${err.message}`);
      process.exit(1);
    },
  );
}
