export {
  assistantMessageOf,
  ExportMode,
  type ExportOptions,
  ExportSegment,
  exportTrajectory,
  SplitReason,
  type TrajectoryExport,
} from "./export-trajectory.js";
export {
  type DoubleReply,
  type InferenceServerDouble,
  type InferenceServerDoubleOptions,
  startInferenceServerDouble,
} from "./inference-server-double.js";
export {
  MASKED,
  TemplateDriftError,
  type TokenizeForTrainerOptions,
  type TrainerTokens,
  tokenizeForTrainer,
} from "./tokenize-for-trainer.js";
export {
  type ChatTokenizer,
  loadChatTokenizer,
  type RenderOptions,
  TokenizerConfig,
  TokenizerLoadError,
  toTemplateMessages,
} from "./tokenizer.js";
