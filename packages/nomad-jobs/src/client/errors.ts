/**
 * The one error type of the Nomad client. It carries what a user needs to act: the call (method,
 * path), what came back (status, body), what was expected, how many attempts were made, and a
 * hint. `code` is stable; runner's error formatter prints `code`, `message` and `hint`.
 */
export type NomadErrorCode =
  | "E_NOMAD_HTTP"
  | "E_NOMAD_CONNECT"
  | "E_NOMAD_TIMEOUT"
  | "E_NOMAD_ABORTED"
  | "E_NOMAD_RESPONSE"
  | "E_NOMAD_CONFIG";

export interface NomadErrorDetails {
  readonly method: string;
  readonly path: string;
  readonly status?: number;
  readonly body?: string;
  readonly expected?: readonly number[];
  readonly attempts?: number;
  readonly hint?: string;
  readonly cause?: unknown;
}

export class NomadError extends Error {
  override readonly name = "NomadError";
  readonly method: string;
  readonly path: string;
  readonly status: number | undefined;
  readonly body: string;
  readonly expected: readonly number[];
  readonly attempts: number;
  readonly hint: string | undefined;

  constructor(
    readonly code: NomadErrorCode,
    message: string,
    d: NomadErrorDetails,
  ) {
    super(message, d.cause === undefined ? undefined : { cause: d.cause });
    this.method = d.method;
    this.path = d.path;
    this.status = d.status;
    this.body = d.body ?? "";
    this.expected = d.expected ?? [200];
    this.attempts = d.attempts ?? 1;
    this.hint = d.hint;
  }

  /** True for a 404 (the job, allocation or evaluation does not exist). */
  get isNotFound(): boolean {
    return this.code === "E_NOMAD_HTTP" && this.status === 404;
  }
}

/** A hint for an HTTP status, given the client's address. */
export function hintForStatus(status: number, address: string, body: string): string | undefined {
  if (status === 403) {
    return /token not found/i.test(body)
      ? "NOMAD_TOKEN is not a valid ACL token for this cluster"
      : "the ACL token (NOMAD_TOKEN) lacks a capability this call needs: it needs submit-job, dispatch-job, read-job, read-logs and list-jobs on the namespace";
  }
  if (status === 404) return undefined;
  if (status === 400) return "Nomad rejected the request as malformed: see the body above";
  if (status >= 500)
    return `the Nomad server at ${address} failed the request (a bad job spec is also a 500: read the body)`;
  return undefined;
}

/** Node network error codes proving the request never reached the server (safe to resend). */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
]);

export function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
