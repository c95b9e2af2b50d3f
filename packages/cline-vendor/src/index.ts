/** The pinned compiled Cline core: package paths, launcher, typed gRPC client, session driver. */
export * from "./artifacts.js";
export * from "./ask-policy.js";
export * from "./case.js";
export * from "./client.js";
export * from "./driver.js";
export * from "./env.js";
export * from "./errors.js";
export * from "./launcher.js";
export * from "./memory-merge.js";
export * from "./messages.js";
export * from "./outcome.js";
export * from "./paths.js";
export * from "./proc.js";
export * from "./provider.js";
export * from "./scripted-openai-server.js";
