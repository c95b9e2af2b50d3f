import { mkdir } from "node:fs/promises";
import type { ProfileId } from "@flakegym/profiles";
import { FlakegymError } from "../errors.js";
import type { LoadedTask } from "../tasks/catalog.js";
import { checkoutBase } from "../tasks/checkout.js";
import { type CheckoutRecord, checkoutRecordOf, materializeSource } from "../tasks/materialize.js";
import type { TaskProfile } from "../tasks/task-profile.js";

/** What a snapshot is built from (`SnapshotSpec`), and the spec of a catalog task or a dataset row. */

/** What to build a snapshot of: a repository at a commit, a profile, install and smoke commands. */
export interface SnapshotSpec {
  readonly taskId: string;
  /** What identifies the repository in the key: a clone URL, or `catalog:<id>`. */
  readonly repo: string;
  /** The commit the source materializes to (part of the key, so it must be known up front). */
  readonly commit: string;
  readonly profile: ProfileId;
  readonly install: readonly string[];
  readonly smoke: readonly string[];
  readonly network: "none" | "required";
  /**
   * Whether the profile's default environment install applies when `install` is empty ("off" for
   * catalog directories, which are self-contained). Default "auto".
   */
  readonly envDefaults?: "auto" | "off";
  /** The Python the task's source runs it under (recorded against the venv's; not part of the key). */
  readonly pythonWanted?: string;
  readonly limits: { memoryMb: number; pids: number; cpuSeconds: number; diskMb: number };
  /** Puts the repository at `commit` into `dest`. */
  materialize(
    dest: string,
    opts: { signal?: AbortSignal; log: (line: string) => void },
  ): Promise<{ commit: string; checkout?: CheckoutRecord }>;
}

/** The snapshot spec of a built-in catalog task. */
export function snapshotSpecOfTask(task: LoadedTask): SnapshotSpec {
  const { spec } = task;
  const src = spec.source;
  return {
    taskId: spec.id,
    repo: src.kind === "local" ? `catalog:${spec.id}` : src.url,
    commit: src.kind === "local" ? src.commit : src.rev,
    profile: spec.profile,
    install: spec.install,
    smoke: spec.smoke,
    network: spec.network,
    envDefaults: src.kind === "local" ? "off" : "auto",
    ...(spec.metadata?.python_version ? { pythonWanted: spec.metadata.python_version } : {}),
    limits: {
      memoryMb: spec.limits.memoryMb,
      pids: spec.limits.pids,
      cpuSeconds: spec.limits.cpuSeconds,
      diskMb: spec.limits.diskMb,
    },
    materialize: (dest, opts) => materializeSource(task, dest, opts),
  };
}

/**
 * The snapshot spec of a dataset row: clone `repoUrl` at its commit (network), no install commands
 * (the profile's smoke commands check the toolchain). A row without a commit needs `resolvedCommit`.
 */
export function snapshotSpecOfProfile(task: TaskProfile, resolvedCommit?: string): SnapshotSpec {
  const commit = task.commit ?? resolvedCommit;
  if (!commit) {
    throw new FlakegymError(
      "E_SNAPSHOT",
      `task '${task.id}' (${task.source.file} row ${task.source.row}) has no commit`,
      {
        hint: "give the row a base_commit, or resolve the branch head first (git ls-remote) and pass it",
      },
    );
  }
  return {
    taskId: task.id,
    repo: task.repoUrl,
    commit,
    profile: task.profile,
    install: [],
    smoke: [],
    network: task.repoKind === "local" ? "none" : "required",
    envDefaults: "auto",
    limits: { memoryMb: 4096, pids: 1024, cpuSeconds: 3600, diskMb: 8192 },
    async materialize(dest, opts) {
      await mkdir(dest, { recursive: true });
      const r = await checkoutBase(dest, task.repoUrl, commit, opts);
      return { commit: r.commit, checkout: checkoutRecordOf(r) };
    },
  };
}
