export * from "./api/index.js";
export { main } from "./cli/main.js";
export * from "./contract/index.js";
export * from "./emit/index.js";
export { describeError, FlakegymError, UsageError } from "./errors.js";
export * from "./eval/index.js";
export * from "./export/formats/index.js";
export * from "./export/index.js";
export * from "./gateway/index.js";
export { type Owner, OwnerRecord, ownerTag, selfOwner } from "./gc/owner.js";
export { formatSweepResult, type SweepReport, sweepLeftovers } from "./gc/sweep.js";
export * from "./policy/index.js";
export * from "./progress/index.js";
export {
  createRedactor,
  GATEWAY_TOKEN_PATTERN,
  MIN_SECRET_LENGTH,
  REDACTED,
  type Redactor,
  runSecrets,
  secretForms,
} from "./redact/redactor.js";
export * from "./rollout/index.js";
export { redactTree } from "./run-format/redact-tree.js";
export {
  type HiddenRunOptions,
  type HiddenTestReport,
  hiddenReportOf,
  runHiddenTests,
  type TestResult,
} from "./scoring/hidden-run.js";
export { hiddenTestsOf, writeFileInWorker } from "./scoring/hidden-tests.js";
export * from "./scoring/index.js";
export * from "./serve/index.js";
export { type BuildOptions, buildSnapshot, forkSnapshot, type SnapshotProgress } from "./snapshots/build.js";
export {
  availableForkMethods,
  type Fork,
  type ForkMethod,
  type ForkMethodChoice,
  forkTree,
} from "./snapshots/fork.js";
export { defaultSnapshotCacheDir, snapshotKey } from "./snapshots/key.js";
export { baseCommitOf, type Snapshot, SnapshotManifest } from "./snapshots/manifest.js";
export { type SnapshotSpec, snapshotSpecOfProfile, snapshotSpecOfTask } from "./snapshots/spec.js";
export { toolchainIdentity } from "./snapshots/toolchain-identity.js";
export {
  BUILTIN_CATALOG_DIR,
  CatalogEntry,
  type LoadedTask,
  listCatalog,
  loadCatalog,
  loadTask,
  loadTaskDir,
  taskProfileOf,
} from "./tasks/catalog.js";
export { type DatasetSummary, formatRowError, type LoadedDataset, loadDataset } from "./tasks/dataset.js";
export { DatasetRow, parseDatasetRow, type RowError } from "./tasks/dataset-row.js";
export { loadHarbor, readHarborDir } from "./tasks/harbor-dir.js";
export { exportHarborDir } from "./tasks/harbor-export.js";
export { type LoadedIntake, loadIntake } from "./tasks/intake.js";
export { commitTree, materializeSource } from "./tasks/materialize.js";
export { ROW_TERM_DEFAULTS, rowReachProfile, rowTermCommands } from "./tasks/row-reward.js";
export { type IntakeTask, parseSwebenchRow, SwebenchRow } from "./tasks/swebench.js";
export { loadSwebench } from "./tasks/swebench-dataset.js";
export { writeTaskFolder } from "./tasks/task-dir.js";
export { TaskProfile } from "./tasks/task-profile.js";
export { TaskSpec, type TestCommand, testCommands, testPassed } from "./tasks/task-spec.js";
export { FLAKEGYM_VERSION } from "./version.js";
export { startViewServer, type ViewServer, writeExport } from "./view/index.js";
export {
  type BackendChoice,
  BackendConfig,
  type BackendConfigInput,
  type BackendEnv,
  type ClosableBackend,
  capabilitiesOf,
  createBackend,
  parseBackendConfig,
  resolveBackend,
} from "./workers/backend.js";
export { collectHostArtifacts } from "./workers/host-artifacts.js";
export type { AgentLaunchContext, AgentLauncher, RunningAgent } from "./workers/local/agent.js";
export { type ClineAgentOptions, clineAgentLauncher } from "./workers/local/cline-agent.js";
export { createLocalBackend, type LocalBackendOptions } from "./workers/local/local-backend.js";
export { SANDBOX_GATEWAY_PORT, SANDBOX_GATEWAY_SOCKET, SANDBOX_PATHS } from "./workers/local/shape.js";
export * from "./workers/nomad/index.js";
export {
  BASE_IMAGE,
  CONTAINERS_CONF,
  createPodmanBackend,
  flakeImagePodmanOptions,
  hostToolchainPodmanOptions,
  type PodmanBackendOptions,
  podmanRunArgs,
  writeBaseRootfs,
} from "./workers/podman/podman-backend.js";
export {
  POOL_DEFAULT_MIN_TRAJECTORIES,
  poolByDefault,
  poolKeyOf,
  unpoolableReason,
} from "./workers/pool/decisions.js";
export { createDummyPoolable, type DummyPoolable } from "./workers/pool/dummy-backend.js";
export { createWorkerPool } from "./workers/pool/pool.js";
export type {
  IdleWorker,
  PoolableBackend,
  PooledBackend,
  PoolState,
  WorkerPoolOptions,
} from "./workers/pool/types.js";
export type {
  BackendCapabilities,
  BackendKind,
  ExecOptions,
  ExecResult,
  ResourceLimits,
  Worker,
  WorkerBackend,
  WorkerExit,
  WorkerLimit,
  WorkerSpec,
} from "./workers/types.js";
