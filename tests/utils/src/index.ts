export {
  type AtroposDouble,
  type AtroposDoubleOptions,
  startAtroposDouble,
  validateScoredData,
} from "./atropos-double.js";
export {
  CHROMIUM,
  launchBrowser,
  NO_CHROMIUM_REASON,
  openPage,
  SCREENSHOT_DIR,
  screenshot,
} from "./browser.js";
export { writeHubDataset } from "./hf-cache.js";
export {
  type DoubleTaskInfo,
  type NomadDouble,
  type NomadDoubleOptions,
  startNomadDouble,
  type TaskBehavior,
} from "./nomad-double.js";
export { DOCUMENTED_CAPABILITIES, type DoubleAclGrant } from "./nomad-double-acl.js";
export { freePort } from "./ports.js";
export {
  findProcesses,
  type ProcInfo,
  processMemoryHolds,
  processReaper,
  processTable,
  waitFor,
} from "./processes.js";
export { REPO_ROOT } from "./repo-root.js";
export { runCli } from "./run-cli.js";
export { slowPlan } from "./scripted-plans.js";
export {
  type RecordedRequest,
  type ScriptedPolicy,
  type ScriptedTurn,
  say,
  scriptedProvider,
  startScriptedPolicy,
  type TurnFault,
  writeThenComplete,
  xmlTool,
} from "./scripted-policy.js";
export { makeTempDir, type TempDir } from "./temp-dir.js";
export { warmPoolSkip } from "./warm-pool.js";
