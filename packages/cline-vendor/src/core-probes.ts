import { fileURLToPath } from "node:url";

/**
 * The Cline core's tool probes answered in its own process (issue 47): `supervisor/core-probes.cjs`
 * answers `which <tool>` (the environment details' detected CLI tools) and the documents-dir lookup
 * (`which xdg-user-dir`, `xdg-user-dir DOCUMENTS`) from the same files the real scripts read, at
 * the moment of the call, where the answer is provably theirs; anything else runs the real program.
 * Each probe would otherwise fork the 300 MB core (≈ 70 a trajectory).
 */

/** The preload that installs the answers (`core-probes-install.cjs`). */
export const CORE_PROBES_PRELOAD_PATH = fileURLToPath(
  new URL("../supervisor/core-probes-install.cjs", import.meta.url),
);
/** The core's Node flags that load it (the supervisor's `--core-node-arg`s). */
export const CORE_PROBES_NODE_ARGS: readonly string[] = ["--require", CORE_PROBES_PRELOAD_PATH];
