import { z } from "zod";
import { listCatalog } from "../../tasks/catalog.js";
import { defineCommand } from "../command.js";

export const tasksListCommand = defineCommand({
  path: ["tasks", "list"],
  summary: "list the built-in task catalog",
  options: z.object({
    json: z.boolean().default(false).describe("print the catalog as JSON"),
    catalog: z.string().optional().describe("catalog directory (default: the built-in catalog)"),
  }),
  examples: ["flakegym tasks list", "flakegym tasks list --json"],
  async run(opts, ctx) {
    const entries = await listCatalog(opts.catalog);
    if (opts.json) {
      ctx.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
      return 0;
    }
    if (entries.length === 0) {
      ctx.stdout.write("the task catalog is empty\n");
      return 0;
    }
    const w = Math.max(...entries.map((e) => e.id.length)) + 2;
    ctx.stdout.write(`${"TASK".padEnd(w)}PROFILE    NETWORK   SUMMARY\n`);
    for (const e of entries) {
      ctx.stdout.write(`${e.id.padEnd(w)}${e.profile.padEnd(11)}${e.network.padEnd(10)}${e.summary}\n`);
    }
    ctx.stdout.write(`${entries.length} task${entries.length === 1 ? "" : "s"}\n`);
    return 0;
  },
});
