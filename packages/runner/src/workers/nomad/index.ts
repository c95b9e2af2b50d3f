export {
  createNomadClient,
  type NomadClient,
  NomadError,
  nomadConfigFromEnv,
  nomadVar,
  workerJobFactProblems,
} from "@flakegym/nomad-jobs";
export { allocationError, describePlacement, describeTaskEvents, exitCodeOf } from "./allocation.js";
export { ALLOC_CONFIG_DIR, collectFromAllocation, MAX_TASK_FILE_BYTES } from "./artifacts.js";
export {
  createNomadBackend,
  exitOf,
  type NomadBackend,
  type NomadWorker,
  workerDriver,
  workerParentJob,
  workerSizing,
} from "./backend.js";
export { MIN_NOMAD_VERSION, nomadDoctorProbe, nomadDoctorRows } from "./doctor.js";
export { NomadWorkerError, type NomadWorkerErrorCode } from "./errors.js";
export { parseGatewayAdvertise, resolvePolicyBaseUrl } from "./gateway.js";
export {
  BackendDriver,
  type NomadBackendDeps,
  NomadBackendOptions,
  type NomadBackendOptionsInput,
} from "./options.js";
export { http2Probe, type ReadinessProbe, tcpProbe } from "./probe.js";
export { formatProgress, type NomadProgress } from "./progress.js";
export { rawExecClineDriver } from "./raw-exec-cline.js";
export {
  diffBodyProblem,
  fetchSupervisorDiff,
  parseDiffHead,
  SUPERVISOR_DIFF_PATH,
  type SupervisorDiffInfo,
} from "./supervisor-diff.js";
export { sweepOrphans } from "./sweep.js";
