import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { BUILTIN_CATALOG_DIR, listCatalog, loadTask } from "../../tasks/catalog.js";
import { exportHarborDir } from "../../tasks/harbor-export.js";
import { defineCommand } from "../command.js";

export const tasksExportCommand = defineCommand({
  path: ["tasks", "export"],
  summary: "write catalog tasks out as Harbor task directories",
  details:
    "Writes <harbor>/<id>/ per task: task.toml, instruction.md, environment/Dockerfile (the profile's\n" +
    "base image, the repository copied to /app, the install commands), tests/test.sh (adds the hidden\n" +
    "tests, runs them, writes /logs/verifier/reward.txt) and solution/solve.sh (the reference patch).",
  options: z.object({
    harbor: z.string().describe("directory to write the Harbor task directories into (created)"),
    task: z.array(z.string().min(1)).optional().describe("catalog task id (repeatable)"),
    all: z.boolean().default(false).describe("export every task in the catalog"),
    catalog: z.string().optional().describe("catalog directory (default: the built-in catalog)"),
    replace: z.boolean().default(false).describe("replace task directories that exist already"),
  }),
  examples: [
    "flakegym tasks export --harbor ./harbor --all",
    "flakegym tasks export --harbor ./harbor --task tinyini-interpolation",
  ],
  async run(opts, ctx) {
    if (opts.all === Boolean(opts.task?.length)) {
      throw new UsageError(
        "give either --task <id> (repeatable) or --all",
        "see flakegym tasks list for the ids",
      );
    }
    const catalog = opts.catalog ? resolve(ctx.cwd, opts.catalog) : BUILTIN_CATALOG_DIR;
    const ids = opts.all ? (await listCatalog(catalog)).map((e) => e.id) : opts.task!;
    const out = resolve(ctx.cwd, opts.harbor);
    await mkdir(out, { recursive: true });
    for (const id of ids) {
      const dir = await exportHarborDir(await loadTask(id, catalog), out, { replace: opts.replace });
      ctx.stdout.write(`exported ${id} → ${dir}\n`);
    }
    return 0;
  },
});
