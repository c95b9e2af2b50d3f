import type { EvalReport } from "../../src/eval/report.js";

/** The provenance block of a report built in a test (the values a real eval records, made up). */
export const testProvenance = (o: Partial<EvalReport["provenance"]> = {}): EvalReport["provenance"] => ({
  flakegymVersion: "0.1.0",
  // as run.json records it (the eval report copies it): the one-byte bundle the workers ran
  cline: { version: "1.0.10", bundle: "one-byte sha256:0f3a (escaped 198 in comments)" },
  node: "v20",
  runId: "e",
  seed: 0,
  trials: 3,
  testRepeat: 1,
  concurrency: 2,
  backend: "local",
  snapshotKeys: {},
  ...o,
});
