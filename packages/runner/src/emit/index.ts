export {
  AtroposMessage,
  InfoResponse,
  RegisterEnvRequest,
  ScoredDataGroup,
  StatusEnvResponse,
} from "../run-format/atropos-schema.js";
export {
  appendJsonLine,
  parseJsonl,
  readJsonl,
  repairJsonl,
  writeFileAtomic,
  writeJsonAtomic,
} from "../run-format/jsonl.js";
export { GroupLine } from "../run-format/schema.js";
export { type AtroposClient, AtroposError, createAtroposClient } from "./atropos/client.js";
export {
  type AtroposEmitter,
  type AtroposEmitterOptions,
  AtroposMark,
  createAtroposEmitter,
  type FinalMark,
  inDoubtGroups,
  markedGroups,
  type PushResult,
} from "./atropos/emitter.js";
export {
  apiRestarted,
  batchSizeProblem,
  checkGroup,
  type DropReason,
  type GroupRules,
  shouldPause,
} from "./atropos/rules.js";
export { buildGroup, groupId, type TokenSequence, toScoredDataGroup } from "./group.js";
