import type { TaskPython } from "../run-format/schema.js";
import type { EnvInstallRecord } from "../snapshots/env-install.js";

/**
 * What run.json records of a python snapshot's interpreter (wanted, used, matches, provider), from
 * its manifest's `envInstall.python`; undefined for a snapshot without a venv. Pure.
 */
export function taskPythonOf(record: EnvInstallRecord["python"] | undefined): TaskPython | undefined {
  if (record === undefined) return undefined;
  return {
    ...(record.wanted !== undefined ? { wanted: record.wanted } : {}),
    used: record.used,
    matches: record.matches,
    ...(record.provider !== undefined ? { provider: record.provider } : {}),
  };
}
