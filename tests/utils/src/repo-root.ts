import { fileURLToPath } from "node:url";

/** The repository root, for tests that run the CLI or read tracked files. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
