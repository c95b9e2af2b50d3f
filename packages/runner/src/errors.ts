/**
 * Every stable `code` a flakegym error carries, in one place: `FlakegymError` (and `HttpError`,
 * `UsageError`, `NomadWorkerError`) take an {@link ErrorCode}, so an unknown or misspelt code is a
 * type error where the error is made and where a caller compares `err.code`. A new code is added
 * here, under the part of the runner that raises it (a code raised in several parts sits under
 * usage and input). docs/design/ARCHITECTURE.md says how to choose one.
 */
export const ERROR_CODES = [
  // usage and input: a flag, file or value given to flakegym was wrong (exit status 2 for E_USAGE)
  "E_USAGE",
  "E_CATALOG",
  "E_TASK_NOT_FOUND",
  "E_DATASET",
  "E_NO_REFERENCE",
  "E_OUT_EXISTS",
  "E_PATCH",
  "E_TOO_LARGE",
  "E_INTERRUPTED",
  "E_DISK_FULL",
  "E_ARTIFACT_MISSING",
  "E_NETWORK_REQUIRED",
  "E_NIX_TIMEOUT",
  "E_UPSTREAM",
  "E_WORKER",
  // the run directory (run-format/)
  "E_JSONL",
  "E_NOT_JSON",
  "E_RESULT",
  "E_RESUME",
  "E_WRITE",
  // tasks and their sources (tasks/)
  "E_GIT",
  "E_REPO_MISSING",
  "E_CHECKOUT_LEAK",
  "E_PYTHON_MISSING",
  "E_PYTHON_MISMATCH",
  // Nix flake facts (nix/)
  "E_ABORTED",
  "E_NIX_EVAL",
  "E_NIX_FACTS",
  // workers and their backends (workers/); the Nomad ones are NomadWorkerErrorCode
  "E_DUMMY_BOOT",
  "E_IMAGE_CLINE",
  "E_NO_SANDBOX",
  "E_PODMAN",
  "E_POOL_ADOPT",
  "E_POOL_MOUNT",
  "E_POOL_UNAVAILABLE",
  "E_WORKER_SPEC",
  "E_WORKER_STOPPED",
  "E_NOMAD_GATEWAY",
  "E_NOMAD_CONFIG",
  "E_NOMAD_PLACEMENT",
  "E_NOMAD_ALLOC_FAILED",
  "E_NOMAD_ALLOC_LOST",
  "E_NOMAD_START_TIMEOUT",
  "E_NOMAD_START_QUEUE",
  "E_NOMAD_NOT_READY",
  "E_NOMAD_EXEC",
  "E_NOMAD_ARTIFACTS",
  "E_NOMAD_CLOSED",
  // the flakegym.yml contract (contract/)
  "E_ARTIFACT",
  "E_CONTRACT",
  // snapshots and forks (snapshots/)
  "E_FORK",
  "E_FORK_METHOD",
  "E_FORK_RELEASE",
  "E_LOCK_TIMEOUT",
  "E_SNAPSHOT",
  "E_SNAPSHOT_BUILD",
  "E_SNAPSHOT_STEP",
  "E_SNAPSHOT_IMAGE",
  "E_SNAPSHOT_CHANGED",
  "E_TOOLCHAIN",
  // scoring (scoring/)
  "E_SCORE_SCRIPT",
  "E_SCORE_TOO_LARGE",
  "E_WORKER_WRITE",
  // Nix images (images/)
  "E_IMAGE_RECORDS",
  "E_NIX_BUILD",
  "E_PODMAN_INSPECT",
  "E_PODMAN_LOAD",
  "E_PODMAN_PUSH",
  // the policy gateway (gateway/)
  "E_GATEWAY",
  "E_GATEWAY_REQUEST",
  "E_TURN_LOG",
  // the Atropos emitter (emit/)
  "E_ATROPOS",
  // tokenizer and token export (export/)
  "E_TEMPLATE",
  "E_TEMPLATE_DRIFT",
  "E_TOKENIZER",
  // the rollout pipeline (rollout/)
  "E_DATASET_CHANGED",
  "E_DATASET_REPO",
  "E_IMAGE_MISSING",
  "E_NIX_OUTPUTS",
  "E_NIX_REALISE",
  "E_INPUT_CHANGED",
  "E_RUN_LOCKED",
  "E_RUN_SEALED",
  "E_WORKER_EXIT",
  // the environment API (api/)
  "E_DEPLOY",
  "E_NO_CONTRACT",
  "E_SCAFFOLD",
  "E_SESSION_INVALID",
  "E_SESSION_TORN_DOWN",
  "E_SESSION_UNKNOWN",
  "E_STAGE_MISSING",
  "E_TARGET_CLONE",
  // the environment server's answers (serve/)
  "E_AUTH",
  "E_BUSY",
  "E_CONFLICT",
  "E_INTERNAL",
  "E_JSON",
  "E_NOT_FOUND",
  "E_REQUEST",
  "E_REQUEST_ID",
  "E_ROUTE",
  "E_URL",
  "E_SERVE_TOKEN",
  "E_TASK",
  "E_ROWS",
  "E_SCENARIO",
  // the viewer (view/)
  "E_VIEW_BUNDLE",
  "E_VIEW_PATH",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Infrastructure and usage faults. Every error has a stable `code` and, where we know it,
 * a `hint` telling the user what to do. A trajectory's end is never an error: it is an Outcome.
 */
export class FlakegymError extends Error {
  override readonly name: string = "FlakegymError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { hint?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
  get hint(): string | undefined {
    return this.options.hint;
  }
}

/**
 * A request one of flakegym's HTTP servers (the policy gateway, the environment server) answers
 * itself with an error status: `status`, a stable `code`, and what the answer carries besides —
 * an OpenAI-style error `type` (the gateway), response `headers` (`retry-after`), `extra` body fields.
 */
export class HttpError extends FlakegymError {
  override readonly name: string = "HttpError";
  readonly type: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly extra: Readonly<Record<string, unknown>>;
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
    answer: { type?: string; headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(code, message);
    this.type = answer.type;
    this.headers = answer.headers ?? {};
    this.extra = answer.extra ?? {};
  }
}

/**
 * A flag, value or file given by the user was wrong, or the run cannot start as asked (its run
 * directory is in use). Exit status 2. Subclasses give a more precise stable `code`.
 */
export class UsageError extends FlakegymError {
  override readonly name: string = "UsageError";
  constructor(message: string, hint?: string, code: ErrorCode = "E_USAGE") {
    super(code, message, hint === undefined ? {} : { hint });
  }
}

/** Formats any thrown value for a terminal: code, message, hint and the cause chain. */
export function describeError(err: unknown): string {
  const lines: string[] = [];
  let cur: unknown = err;
  let depth = 0;
  while (cur !== undefined && depth < 5) {
    if (cur instanceof Error) {
      const code = (cur as { code?: unknown }).code;
      const prefix = depth === 0 ? "error" : "  caused by";
      lines.push(`${prefix}${typeof code === "string" ? `[${code}]` : ""}: ${cur.message}`);
      const hint = (cur as { hint?: unknown }).hint;
      if (typeof hint === "string" && hint.length > 0) lines.push(`  hint: ${hint}`);
      cur = cur.cause;
    } else {
      lines.push(`${depth === 0 ? "error" : "  caused by"}: ${String(cur)}`);
      cur = undefined;
    }
    depth++;
  }
  return lines.join("\n");
}

/**
 * One line for a recorded reason (a trajectory's infra detail, a summary row): the message and, for a
 * FlakegymError with a hint, what to do (`… — hint: …`), so the reason keeps the way out.
 */
export function messageWithHint(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const hint = err instanceof Error ? (err as { hint?: unknown }).hint : undefined;
  return typeof hint === "string" && hint.length > 0 ? `${message} — hint: ${hint}` : message;
}
