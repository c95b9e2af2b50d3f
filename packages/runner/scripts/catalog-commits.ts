/**
 * Prints the commit each local catalog task's `repo/` materializes to, and with `--write` updates
 * `source.commit` in its task.json. Run after editing a task's repo: `npm run catalog:commits -w @flakegym/runner`.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILTIN_CATALOG_DIR, loadCatalog } from "../src/tasks/catalog.js";
import { commitTree } from "../src/tasks/materialize.js";

const write = process.argv.includes("--write");
for (const task of await loadCatalog(BUILTIN_CATALOG_DIR)) {
  if (task.spec.source.kind !== "local") continue;
  const tmp = await mkdtemp(join(tmpdir(), "flakegym-commit-"));
  try {
    await cp(task.paths.sourceDir!, tmp, { recursive: true });
    const commit = await commitTree(tmp);
    const same = commit === task.spec.source.commit;
    console.log(`${task.spec.id}: ${commit}${same ? "" : ` (task.json says ${task.spec.source.commit})`}`);
    if (!same && write) {
      const file = join(task.dir, "task.json");
      const text = await readFile(file, "utf8");
      await writeFile(`${file}.tmp`, text.replace(task.spec.source.commit, commit));
      const { rename } = await import("node:fs/promises");
      await rename(`${file}.tmp`, file);
      console.log(`  updated ${file}`);
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
