/**
 * Errors raised by cline-vendor. Like the runner's FlakegymError (which this leaf package must not
 * import), every error carries a stable `code` and, where we know it, a `hint` saying what to do.
 * A task's end is never an error: it is an {@link Outcome}.
 */
export class ClineVendorError extends Error {
  override readonly name: string = "ClineVendorError";
  readonly hint: string | undefined;
  constructor(
    readonly code: string,
    message: string,
    options: { hint?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.hint = options.hint;
  }
}

/** Stable error codes of this package. */
export const ErrorCode = {
  /** The platform/arch has no cline-host binary. */
  UnsupportedPlatform: "E_CLINE_UNSUPPORTED_PLATFORM",
  /** The cline npm package is missing, incomplete, or not the pinned version. */
  BadInstall: "E_CLINE_INSTALL",
  /** The core did not become ready in time, or its processes died while starting. */
  StartFailed: "E_CLINE_START",
  /** A gRPC call failed (see {@link ClineRpcError}). */
  Rpc: "E_CLINE_RPC",
  /** An argument given to this package was invalid. */
  InvalidArgument: "E_CLINE_ARGUMENT",
  /** Writing artifacts failed. */
  Artifacts: "E_CLINE_ARTIFACTS",
} as const;
