export {
  CANCELLED,
  type GroupRun,
  type GroupRunnerOptions,
  rolloutOptionsOf,
  sameRequest,
} from "./groups.js";
export {
  provenanceOf,
  readGroupRecords,
  readResults,
  readServedTrajectory,
  ServedSegment,
  ServedTrajectory,
  servedTrajectory,
} from "./record.js";
export { apiSchema, DoneLine, GroupRequest, GroupStatus, StreamLine } from "./schema.js";
export { authorized, isLoopback, type ServeHandle, type ServeOptions, startServe } from "./server.js";
