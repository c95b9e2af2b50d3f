import { z } from "zod";
import { type Job, JobRegisterRequest, parseJob } from "../spec/job.js";
import type { CallOptions, QueryOptions, RequestCore, Result } from "./request.js";
import {
  AllocationListStub,
  Evaluation,
  JobDeregisterResponse,
  JobDispatchResponse,
  JobListStub,
  JobRegisterResponse,
} from "./responses.js";

/** `/v1/jobs` and `/v1/job/:id/...`. Method names mirror the API. */

export const JobInfo = z.looseObject({
  ID: z.string(),
  ParentID: z.string().nullish(),
  Type: z.string().optional(),
  Status: z.string().optional(),
  Stop: z.boolean().optional(),
  Dispatched: z.boolean().optional(),
  Meta: z
    .record(z.string(), z.string())
    .nullish()
    .transform((v) => v ?? {}),
  JobModifyIndex: z.number().optional(),
});
export type JobInfo = z.infer<typeof JobInfo>;

export interface DispatchRequest {
  readonly meta?: Readonly<Record<string, string>>;
  /** At most 16 KiB; sent base64-encoded. */
  readonly payload?: Uint8Array | string;
  /**
   * Makes the dispatch safe to resend: while a child created with this token exists, dispatching
   * again returns that child instead of creating another. The client then retries it like a GET.
   */
  readonly idempotencyToken?: string;
  /** Inserted into the child's id: `<parent>/dispatch-<template>-<unix>-<rand>`. */
  readonly idPrefixTemplate?: string;
}

export interface ListRequest {
  /** Only jobs whose id starts with this. */
  readonly prefix?: string;
  /** A go-bexpr filter, e.g. `Meta.flakegym_run == "r1"`. */
  readonly filter?: string;
  /** Include each job's Meta in the stubs. */
  readonly meta?: boolean;
}

export const DISPATCH_PAYLOAD_LIMIT = 16 * 1024;

export function jobPath(jobId: string, suffix = ""): string {
  return `/v1/job/${encodeURIComponent(jobId)}${suffix}`;
}

/** The JSON body of a dispatch; a payload over Nomad's 16 KiB is a RangeError naming its size. */
export function dispatchBody(jobId: string, req: DispatchRequest): Record<string, unknown> {
  const payload =
    req.payload === undefined
      ? undefined
      : typeof req.payload === "string"
        ? Buffer.from(req.payload, "utf8")
        : Buffer.from(req.payload);
  if (payload && payload.length > DISPATCH_PAYLOAD_LIMIT) {
    throw new RangeError(
      `dispatch payload of ${payload.length} bytes exceeds Nomad's limit of ${DISPATCH_PAYLOAD_LIMIT} bytes`,
    );
  }
  return {
    JobID: jobId,
    Meta: req.meta ?? {},
    ...(payload ? { Payload: payload.toString("base64") } : {}),
    ...(req.idPrefixTemplate ? { IdPrefixTemplate: req.idPrefixTemplate } : {}),
  };
}

/** A list answer Nomad sends as `null` when empty. */
const listOf = <S extends z.ZodType>(item: S) =>
  z
    .array(item)
    .nullable()
    .transform((v) => v ?? []);
/**
 * Built once: a zod schema compiles its checks on its first parses, so a schema built per call
 * costs its compilation every call (issue 49: the runner asks for allocations at every start).
 */
const AllocationList = listOf(AllocationListStub);
const EvaluationList = listOf(Evaluation);
const JobList = z.array(JobListStub);

/**
 * `POST /v1/jobs`. With `enforceIndex: 0` it only creates: a second register of the same id
 * fails ("job already exists"), which makes a create safe to resend.
 */
async function register(
  core: RequestCore,
  job: Job,
  opts: CallOptions & { enforceIndex?: number } = {},
): Promise<Result<JobRegisterResponse>> {
  const body = JobRegisterRequest.parse({
    Job: parseJob(job),
    ...(opts.enforceIndex !== undefined ? { EnforceIndex: true, JobModifyIndex: opts.enforceIndex } : {}),
  });
  return core.json({ method: "POST", path: "/v1/jobs", body }, JobRegisterResponse, opts);
}

/** `POST /v1/job/:id/dispatch`: one child job of a parameterized job. */
async function dispatch(
  core: RequestCore,
  jobId: string,
  req: DispatchRequest = {},
  opts: CallOptions = {},
): Promise<Result<JobDispatchResponse>> {
  const body = dispatchBody(jobId, req);
  return core.json(
    {
      method: "POST",
      path: jobPath(jobId, "/dispatch"),
      query: { idempotency_token: req.idempotencyToken },
      body,
      idempotent: req.idempotencyToken !== undefined,
    },
    JobDispatchResponse,
    opts,
  );
}

/** `DELETE /v1/job/:id`; `purge` removes it from the state store at once. Idempotent. */
function deregister(
  core: RequestCore,
  jobId: string,
  req: { purge?: boolean } = {},
  opts: CallOptions = {},
): Promise<Result<JobDeregisterResponse>> {
  return core.json(
    { method: "DELETE", path: jobPath(jobId), query: { purge: req.purge ? "true" : undefined } },
    JobDeregisterResponse,
    opts,
  );
}

/** `GET /v1/jobs`. */
function list(
  core: RequestCore,
  req: ListRequest = {},
  opts: QueryOptions = {},
): Promise<Result<JobListStub[]>> {
  return core.json(
    {
      method: "GET",
      path: "/v1/jobs",
      query: { prefix: req.prefix, filter: req.filter, meta: req.meta ? "true" : undefined },
    },
    JobList,
    opts,
  );
}

export function createJobsApi(core: RequestCore) {
  return {
    register: (job: Job, opts: CallOptions & { enforceIndex?: number } = {}) => register(core, job, opts),
    dispatch: (jobId: string, req: DispatchRequest = {}, opts: CallOptions = {}) =>
      dispatch(core, jobId, req, opts),
    deregister: (jobId: string, req: { purge?: boolean } = {}, opts: CallOptions = {}) =>
      deregister(core, jobId, req, opts),
    /** `GET /v1/job/:id` (404 → NomadError with isNotFound). */
    info(jobId: string, opts: QueryOptions = {}): Promise<Result<JobInfo>> {
      return core.json({ method: "GET", path: jobPath(jobId) }, JobInfo, opts);
    },
    list: (req: ListRequest = {}, opts: QueryOptions = {}) => list(core, req, opts),
    /** `GET /v1/job/:id/allocations`; a blocking query with `index`. */
    allocations(
      jobId: string,
      req: { all?: boolean } = {},
      opts: QueryOptions = {},
    ): Promise<Result<AllocationListStub[]>> {
      return core.json(
        { method: "GET", path: jobPath(jobId, "/allocations"), query: { all: req.all ? "true" : undefined } },
        AllocationList,
        opts,
      );
    },
    /** `GET /v1/job/:id/evaluations`: why allocations were (not) placed. */
    evaluations(jobId: string, opts: QueryOptions = {}): Promise<Result<Evaluation[]>> {
      return core.json({ method: "GET", path: jobPath(jobId, "/evaluations") }, EvaluationList, opts);
    },
  };
}
export type JobsApi = ReturnType<typeof createJobsApi>;
