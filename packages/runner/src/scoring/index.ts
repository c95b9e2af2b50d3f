export { dropPaths, type FileDiff, splitDiff, touchedPaths } from "../text/diff.js";
export { codeReading, fileReadingOf, originalsNeeded, stripToCode } from "./code-reading.js";
export { type DecoyPlan, type GuardReport, guardFiles } from "./decoys/guard.js";
export { EVAL_CMD_ID, formatOfPath, twinFiles } from "./decoys/twin.js";
export { type DemoteInput, demotedCommand } from "./demote.js";
export { askJudge, JudgeConfig, judgeMessages, parseJudgeScore } from "./judge.js";
export { createDummyJudge } from "./judge-dummy.js";
export {
  type AskJudge,
  boundJudge,
  type JudgeStageOptions,
  judgeReadings,
  judgeTerm,
} from "./judge-readings.js";
export { createNamer, promptNames, showNames } from "./new-names.js";
export { type BoundHidden, type PreparedHidden, prepareReadOnlyHidden } from "./read-only.js";
export {
  combine,
  evalCmdValue,
  Gate,
  PartialCredit,
  Term,
  TestResults,
  TestStatus,
  TestsTerm,
  testsTerm,
  Weights,
} from "./reward.js";
export {
  type HiddenTests,
  type HiddenTestVerdict,
  mergeRuns,
  type ScoreOptions,
  ScoringSetupError,
  scoreDiff,
} from "./scorer.js";
export {
  type ComposedScript,
  composeScoringScript,
  MAX_INLINE_SCRIPT_BYTES,
  type ParsedScoring,
  parseScoringOutput,
  type ScoringPlan,
  type ScriptFile,
  type StepResult,
} from "./script.js";
export { snapshotTextReader } from "./snapshot-files.js";
export { type SnapshotNames, snapshotNames, snapshotNamesCached } from "./snapshot-names.js";
export {
  createDummyScoringRun,
  type ScoringRun,
  scoreGuarded,
  twinGate,
  twinOptions,
  withTwin,
} from "./twin-run.js";
