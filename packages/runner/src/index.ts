export { main } from "./cli/main.js";
export { describeError, FlakegymError, UsageError } from "./errors.js";
export { FLAKEGYM_VERSION } from "./version.js";
export * from "./emit/index.js";
export * from "./progress/index.js";
export * from "./rollout/index.js";
export * from "./scoring/index.js";
