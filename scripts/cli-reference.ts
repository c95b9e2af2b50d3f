/**
 * Writes docs/reference/cli.md from the commands' option schemas (`npm run docs:cli`); with
 * `--check`, exits 1 naming the page when it differs from what the commands render now.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "../packages/runner/src/cli/command.js";
import { commands } from "../packages/runner/src/cli/commands/index.js";
import { renderCliReference } from "../packages/runner/src/cli/help.js";

const PAGE = join(import.meta.dirname, "..", "docs", "reference", "cli.md");
const text = renderCliReference(commands as readonly Command[]);
if (process.argv.includes("--check")) {
  const now = readFileSync(PAGE, "utf8");
  if (now !== text) {
    console.error("docs/reference/cli.md is stale: run `npm run docs:cli` and commit it");
    process.exit(1);
  }
} else {
  writeFileSync(PAGE, text);
  console.log(`wrote docs/reference/cli.md (${commands.length} commands)`);
}
