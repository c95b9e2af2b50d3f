export { ATIF_VERSION, atifTrajectory } from "./atif.js";
export { type ExportNote, noteLine } from "./credit.js";
export { defaultExportPath, ExportFormat, type ExportRunOptions, exportRun } from "./export-run.js";
export type { LengthCaps } from "./length-cap.js";
export {
  callsOf,
  exportRecords,
  formatRecords,
  type Piece,
  piecesOf,
  RecordFormat,
  SegmentPolicy,
  slimeStatus,
} from "./trainer-formats.js";
