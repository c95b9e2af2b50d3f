import { FlakegymError } from "../../errors.js";

/**
 * Why a Nomad worker could not start or run. Each names the job, what Nomad said (allocation
 * status, task events, placement metrics) and what to do.
 */
export type NomadWorkerErrorCode =
  | "E_NOMAD_GATEWAY"
  | "E_NOMAD_CONFIG"
  | "E_NOMAD_PLACEMENT"
  | "E_NOMAD_ALLOC_FAILED"
  | "E_NOMAD_ALLOC_LOST"
  | "E_NOMAD_START_TIMEOUT"
  | "E_NOMAD_START_QUEUE"
  | "E_NOMAD_NOT_READY"
  | "E_NOMAD_EXEC"
  | "E_NOMAD_ARTIFACTS"
  | "E_NOMAD_CLOSED";

export class NomadWorkerError extends FlakegymError {
  override readonly name = "NomadWorkerError";
  constructor(
    override readonly code: NomadWorkerErrorCode,
    message: string,
    options: { hint?: string; cause?: unknown; jobId?: string; allocId?: string } = {},
  ) {
    super(code, message, options);
    this.jobId = options.jobId;
    this.allocId = options.allocId;
  }
  readonly jobId: string | undefined;
  readonly allocId: string | undefined;
}
