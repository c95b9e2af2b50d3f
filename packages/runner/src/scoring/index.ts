export { dropPaths, type FileDiff, splitDiff, touchedPaths } from "./diff.js";
export { askJudge, JudgeConfig, judgeMessages, parseJudgeScore } from "./judge.js";
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
  type HiddenTestOps,
  type HiddenTestVerdict,
  mergeRuns,
  type ScoreOptions,
  ScoringSetupError,
  scoreDiff,
} from "./scorer.js";
