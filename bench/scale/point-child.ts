/**
 * Child process of `npm run bench -- scale`: runs ONE concurrency point (point.ts) and exits, so
 * each point's runner starts fresh (its RSS, heap and JIT state owe nothing to the point before).
 *
 * Protocol (IPC): argv `<json PointOptions>`; sends `{ result: PointResult & { cluster } }` once the
 * point ran, or `{ error: "<message>" }`; then exits.
 */
import { type PointOptions, runPoint } from "./point.js";

const options = JSON.parse(process.argv[2] ?? "{}") as PointOptions;
try {
  const result = await runPoint(options);
  process.send?.({ result }, () => process.exit(0));
} catch (err) {
  process.send?.({ error: (err as Error).stack ?? String(err) }, () => process.exit(1));
}
