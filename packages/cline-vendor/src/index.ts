/** The pinned compiled Cline core: package paths, launcher, typed gRPC client, session driver. */

export * from "./agent-user.js";
export * from "./artifacts.js";
export * from "./ask-policy.js";
export * from "./case.js";
export * from "./client.js";
export * from "./core-gc.js";
export * from "./core-probes.js";
export * from "./driver.js";
export * from "./env.js";
export * from "./errors.js";
export * from "./http-close.js";
export * from "./launcher.js";
export * from "./mapped-core.js";
export * from "./memory-merge.js";
export * from "./messages.js";
export * from "./one-byte-bundle.js";
export * from "./one-byte-core.js";
export * from "./one-byte-verify.js";
export * from "./outcome.js";
export * from "./paths.js";
export * from "./proc.js";
export * from "./provider.js";
export * from "./scripted-openai-server.js";
export * from "./scripted-turn.js";
