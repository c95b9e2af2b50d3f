export { main } from "./cli/main.js";
export { describeError, FlakegymError, UsageError } from "./errors.js";
export { FLAKEGYM_VERSION } from "./version.js";
export * from "./workers/nomad/index.js";
