import type { WorkerJobInput } from "../../src/spec/worker-job.js";

/** A digest every test image is pinned by. */
export const DIGEST = `sha256:${"ab12".repeat(16)}`;

/** The docker agent worker the builder tests start from. */
export const BASE_WORKER: WorkerJobInput = {
  jobId: "flakegym-run1-demo-agent-0f0f0f0f",
  runId: "run1",
  taskId: "demo",
  profile: "python",
  driver: { driver: "docker", image: `oci.example/flakegym/python-env@${DIGEST}` },
  policyBaseUrl: "http://10.0.0.5:8089/v1",
  expiresAtMs: 1_800_000_000_000,
  maxRunMs: 1_800_000,
};
