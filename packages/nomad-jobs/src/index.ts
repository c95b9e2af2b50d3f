/**
 * @flakegym/nomad-jobs: zod schemas for the part of Nomad's job JSON flakegym writes, pure
 * builders (the Cline worker job, the exec job) with a `canonicalizeJob` that fills Nomad's
 * defaults, and a thin typed HTTP client (one file per resource over one request core).
 * Also home of `createDeadline`, the one deadline helper (see deadline.ts). Imports no other
 * flakegym package.
 */
export const NOMAD_API_VERSION = "v1";

export * from "./client/agent.js";
export * from "./client/allocations.js";
export * from "./client/client.js";
export * from "./client/config.js";
export * from "./client/errors.js";
export * from "./client/events.js";
export * from "./client/fs.js";
export * from "./client/jobs.js";
export * from "./client/logs.js";
export type { CallOptions, QueryMeta, QueryOptions, RequestCore, Result } from "./client/request.js";
export * from "./client/responses.js";
export * from "./client/status.js";
export * from "./deadline.js";
export * from "./duration.js";
export * from "./spec/canonicalize.js";
export * from "./spec/exec-job.js";
export * from "./spec/guards.js";
export * from "./spec/job.js";
export * from "./spec/job-facts.js";
export * from "./spec/network-mode.js";
export * from "./spec/worker-driver.js";
export * from "./spec/worker-driver-config.js";
export * from "./spec/worker-env.js";
export * from "./spec/worker-job.js";
export * from "./spec/worker-names.js";
export * from "./spec/worker-resources.js";
