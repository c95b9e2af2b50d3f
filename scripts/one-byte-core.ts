/**
 * `npm run core:one-byte [-- --soft]`: builds the Cline core's bundle as a one-byte string into
 * flakegym's cache (packages/cline-vendor/src/one-byte-core.ts; docs/design/cline.md). `npm ci` runs it
 * with `--soft` (a failure is printed with what to do and does not fail the install); without the
 * build every core runs the package's own bundle, as the doctor and `ClineCore.oneByte` say. Then the
 * mapped source beside it (packages/cline-vendor/src/mapped-core.ts: its Latin-1 bytes, the addon).
 */
import {
  buildMappedCore,
  buildOneByteCore,
  ClineVendorError,
  resolveClinePackage,
} from "@flakegym/cline-vendor";
import { flakegymCacheRoot } from "../packages/runner/src/cache-root.mjs";

const args = process.argv.slice(2);
const unknown = args.filter((a) => a !== "--soft");
if (unknown.length > 0) {
  console.error(`core:one-byte: unknown flag '${unknown[0]}' (allowed: --soft)`);
  process.exit(2);
}
try {
  const t0 = process.cpuUsage();
  const b = await buildOneByteCore(resolveClinePackage(), flakegymCacheRoot(process.env));
  const cpu = process.cpuUsage(t0);
  const found = Object.entries(b.counts)
    .filter(([, n]) => n > 0)
    .map(([p, n]) => `${n} in ${p}s`)
    .join(", ");
  console.log(
    b.built
      ? `core:one-byte: built ${b.coreJs} (escaped ${found || "nothing"}; ${b.nodesCompared} syntax nodes and ${b.stringLiteralsCompared} string literals compared with the original: same meaning; ${((cpu.user + cpu.system) / 1e6).toFixed(1)} CPU s)`
      : `core:one-byte: ${b.coreJs} is built (pinned hash)`,
  );
  const m = await buildMappedCore(b, flakegymCacheRoot(process.env));
  console.log(
    `core:one-byte: the mapped source and its addon ${m.built ? "built in" : "are built in"} ${m.dir}`,
  );
} catch (e) {
  const hint = e instanceof ClineVendorError && e.hint ? ` (${e.hint})` : "";
  console.error(`core:one-byte: ${e instanceof Error ? e.message : String(e)}${hint}`);
  if (!args.includes("--soft")) process.exit(1);
}
