/**
 * Names the worker job shares with its dispatches and the runner: meta keys, the job id prefix,
 * port labels, group and task names (see docs/reference/nomad.md, "Job shape").
 */

/** Meta keys flakegym sets on every job it creates (`NOMAD_META_<key>` inside the task). */
export const META = {
  run: "flakegym_run",
  task: "flakegym_task",
  trajectory: "flakegym_trajectory",
  attempt: "flakegym_attempt",
  profile: "flakegym_profile",
  image: "flakegym_image",
  kind: "flakegym_kind",
  /** The worker's own gateway route (per trajectory): a dispatch meta, so parents stay shared. */
  policyUrl: "flakegym_policy_url",
  /** The worker's core token (per dispatch): the supervisor's gate admits only calls carrying it. */
  coreToken: "flakegym_core_token",
  /** Unix ms after which nobody can still be using the job: the orphan sweep may purge it. */
  expires: "flakegym_expires",
  /** raw_exec: the trajectory's own fork, copied into the workspace (a dispatch meta, so parents stay shared). */
  snapshotDir: "flakegym_snapshot_dir",
} as const;

/** Every flakegym job id starts with this (the orphan sweep lists by it). */
export const JOB_ID_PREFIX = "flakegym-";
export const GRPC_PORT_LABEL = "grpc";
/** A second dynamic port for cline-host (its gRPC bridge to the core; never published). */
export const HOST_PORT_LABEL = "hostbridge";
export const WORKER_GROUP = "worker";
export const WORKER_TASK = "worker";
