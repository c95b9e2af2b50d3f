/**
 * Infrastructure and usage faults. Every error has a stable `code` and, where we know it,
 * a `hint` telling the user what to do. A trajectory's end is never an error: it is an Outcome.
 */
export class FlakegymError extends Error {
  override readonly name: string = "FlakegymError";
  constructor(
    readonly code: string,
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
    code: string,
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
  constructor(message: string, hint?: string, code = "E_USAGE") {
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
