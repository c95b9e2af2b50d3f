export {
  provenanceOf,
  readGroupRecords,
  readResults,
  readServedTrajectory,
  ServedSegment,
  ServedTrajectory,
  servedTrajectory,
} from "../export/served-record.js";
export { type GroupEnd, type GroupEndInput, groupEndOf } from "./group-end.js";
export {
  CANCELLED,
  doneLineOf,
  type GroupRun,
  type GroupRunnerOptions,
  rolloutOptionsOf,
  sameRequest,
} from "./groups.js";
export { apiSchema, DoneLine, GroupRequest, GroupStatus, StreamLine, TrajectoryErrorLine } from "./schema.js";
export { authorized, isLoopback, type ServeHandle, type ServeOptions, startServe } from "./server.js";
export { checkAllowedUpstreams, MODEL_KEY_ENV, upstreamProblem, withoutModelKeys } from "./upstream-allow.js";
