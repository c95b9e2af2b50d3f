export { exportEntries, writeExport } from "./export-html.js";
export { guardRequest, isCleanRawPath, isLoopbackHost, tokenMatches } from "./guard.js";
export { groupRows, queryRows, type TrajectoryRow } from "./query.js";
export { RowQuery } from "./query-schema.js";
export { createViewStore, type ViewStore } from "./run-data.js";
export { openSafeRoot, type SafeRoot, ViewPathError } from "./safe-read.js";
export { startViewServer, type ViewServer } from "./server.js";
