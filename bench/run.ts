/**
 * `npm run bench -- <name> [args]` runs `bench/<name>.bench.ts`. Each benchmark measures ours and
 * the baseline side by side in one run and prints the ratio (absolute times are not comparable
 * across runs on a noisy machine).
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BenchContext, createBenchContext } from "./lib.js";

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .map((f) => f.replace(/\.bench\.ts$/, ""))
  .sort();
const [name, ...args] = process.argv.slice(2);
if (!name || name === "--help") {
  console.log(`usage: npm run bench -- <name> [args]\navailable: ${available.join(", ") || "(none yet)"}`);
  process.exit(name ? 0 : 2);
}
if (!available.includes(name)) {
  console.error(`bench: unknown benchmark '${name}'; available: ${available.join(", ") || "(none yet)"}`);
  process.exit(2);
}
const mod = (await import(join(here, `${name}.bench.ts`))) as {
  main(ctx: BenchContext, args: string[]): Promise<void>;
};
await mod.main(createBenchContext(name, join(here, "..")), args);
