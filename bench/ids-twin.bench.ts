/**
 * `npm run bench -- ids-twin [--reps 3]`
 *
 * The cost of scoring a per-id task (kind `ids`: one jest command per graded id) with its decoy
 * twin (scoring/twin-run.ts: every id's command run again, TWIN_REPEAT = 3 times, in a fresh
 * sandbox on hidden test files whose expected values changed) against scoring it once, side by
 * side (twin-cost.ts): the fixture tests/fixtures/ids/slugify-digits (jest from the registry at
 * snapshot build), its reference solution scored alternately both ways. Expected: 3–4× (each id's
 * command runs once, and three times in the twin's sandbox).
 */
import { join } from "node:path";
import type { BenchContext } from "./lib.js";
import { measureTaskTwinCost } from "./twin-cost.js";

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const taskDir = join(import.meta.dirname, "../tests/fixtures/ids/slugify-digits");
  await measureTaskTwinCost(ctx, { name: "ids-twin", what: "per-id scoring", taskDir, args });
}
