/**
 * `npm run bench -- eval-cmd-twin [--reps 3]`
 *
 * The cost of scoring an eval_cmd task with its decoy twin (scoring/twin-run.ts: the eval command
 * run a second time, in a fresh sandbox, on hidden test files whose expected values changed)
 * against scoring it once, side by side (twin-cost.ts): the Harbor fixture hello-greeting,
 * imported, its reference solution scored alternately both ways. Expected: 3–4× (the eval command
 * runs once, and TWIN_REPEAT = 3 times in the twin's sandbox).
 */
import { join } from "node:path";
import { execa } from "execa";
import type { BenchContext } from "./lib.js";
import { measureTaskTwinCost } from "./twin-cost.js";

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const catalog = join(ctx.outDir, "catalog");
  const fixtures = join(import.meta.dirname, "../tests/fixtures/harbor/hello-greeting");
  const imp = await execa(
    process.execPath,
    [
      join(import.meta.dirname, "../packages/runner/bin/flakegym.js"),
      "tasks",
      "import",
      "--dataset",
      fixtures,
      "--out",
      catalog,
      "--replace",
    ],
    { reject: false },
  );
  if (imp.exitCode !== 0) throw new Error(`tasks import of ${fixtures} failed: ${imp.stderr}`);
  const taskDir = join(catalog, "hello-greeting");
  await measureTaskTwinCost(ctx, { name: "eval-cmd-twin", what: "eval_cmd scoring", taskDir, args });
}
