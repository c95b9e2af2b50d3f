export { main } from "./cli/main.js";
export { describeError, FlakegymError, UsageError } from "./errors.js";
export * from "./export/index.js";
export * from "./gateway/index.js";
export * from "./policy/index.js";
export { FLAKEGYM_VERSION } from "./version.js";
