export type { ProgressEvent, ProgressSink, TrajectoryPhase } from "./events.js";
export { createReporter, plainLine, type Reporter, renderView } from "./reporter.js";
