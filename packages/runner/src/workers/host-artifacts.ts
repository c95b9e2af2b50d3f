import { collectArtifacts } from "@flakegym/cline-vendor";
import { FlakegymError } from "../errors.js";
import type { CollectArtifactsInput } from "./types.js";

/**
 * `collectArtifacts` of a worker whose workspace and Cline config dir are host directories (local,
 * podman): cline-vendor's collector reads the task files without following links and takes the
 * diff with a repository of ours against the pristine snapshot's objects — never the workspace's
 * own `.git` (docs/reference/sandbox.md, Threat model).
 */
export async function collectHostArtifacts(
  worker: { readonly id: string; readonly configDir: string; readonly workspace: string },
  c: CollectArtifactsInput,
): Promise<void> {
  if (!c.baseCommit || !c.baseObjects) {
    throw new FlakegymError(
      "E_WORKER",
      `worker ${worker.id}: collectArtifacts needs baseCommit and baseObjects (the snapshot's commit and its .git/objects)`,
      { hint: "pass the snapshot's manifest commit and join(snapshot.workspace, '.git', 'objects')" },
    );
  }
  await collectArtifacts({
    configDir: worker.configDir,
    taskId: c.taskId,
    workspace: worker.workspace,
    dest: c.dest,
    baseCommit: c.baseCommit,
    baseObjects: c.baseObjects,
    ...(c.extra ? { extra: c.extra } : {}),
    overwrite: true,
    signal: c.signal,
    ...(c.timeoutMs ? { timeoutMs: c.timeoutMs } : {}),
  });
}
