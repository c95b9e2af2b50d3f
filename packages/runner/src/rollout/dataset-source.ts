import { stat } from "node:fs/promises";
import { execa } from "execa";
import { FlakegymError } from "../errors.js";
import { git, gitEnv, probeRemote } from "../tasks/materialize.js";
import type { TaskProfile } from "../tasks/task-profile.js";

/**
 * Where a dataset row's repository is, checked before its snapshot is built: a local path must be
 * a git repository (works offline); `owner/repo` and URLs are probed with a short `git ls-remote`
 * so an offline machine fails the task fast with a clear message instead of a long clone timeout.
 * Returns the row with its commit resolved to a full commit id.
 */

/** How long the reachability probe of a remote repository may take. */
export const REMOTE_PROBE_TIMEOUT_MS = 10_000;

const where = (t: TaskProfile) => `row '${t.id}' (${t.source.file} row ${t.source.row})`;

export async function resolveRowSource(
  task: TaskProfile,
  signal: AbortSignal,
  probeTimeoutMs = REMOTE_PROBE_TIMEOUT_MS,
): Promise<TaskProfile> {
  const rev = task.commit ?? task.branch ?? "HEAD";
  if (task.repoKind === "local") {
    const dir = task.repoUrl;
    const isDir = await stat(dir).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isDir) {
      throw new FlakegymError("E_DATASET_REPO", `${where(task)}: repo_url '${dir}' is not a directory`, {
        hint: "a local repo_url must be a directory holding a git repository (relative paths are resolved against the dataset file's directory)",
      });
    }
    let commit: string;
    try {
      commit = await git(["rev-parse", "--verify", "--end-of-options", `${rev}^{commit}`], {
        cwd: dir,
        signal,
        timeoutMs: 30_000,
      });
    } catch (cause) {
      throw new FlakegymError(
        "E_DATASET_REPO",
        `${where(task)}: '${rev}' is not a commit of the git repository at ${dir}: ${(cause as Error).message}`,
        { cause, hint: "check the row's base_commit / branch and that repo_url is a git repository" },
      );
    }
    return { ...task, commit };
  }
  try {
    await probeRemote(task.id, task.repoUrl, probeTimeoutMs, signal);
  } catch (err) {
    if (signal.aborted || !(err instanceof FlakegymError)) throw err;
    throw new FlakegymError("E_NETWORK_REQUIRED", `${where(task)}: ${err.message}`, {
      cause: err,
      hint: "this row's repository is cloned over the network; run it on a machine that reaches it, or point repo_url at a local clone",
    });
  }
  if (task.commit) return task;
  const ref = task.branch ? `refs/heads/${task.branch}` : "HEAD";
  const r = await execa("git", ["ls-remote", "--exit-code", task.repoUrl, ref], {
    env: gitEnv(),
    reject: false,
    timeout: probeTimeoutMs * 3,
    cancelSignal: signal,
    stdin: "ignore",
  });
  const sha = r.exitCode === 0 ? /^([0-9a-f]{40})\s/m.exec(r.stdout)?.[1] : undefined;
  if (!sha) {
    throw new FlakegymError(
      "E_DATASET_REPO",
      `${where(task)}: cannot resolve ${ref} of ${task.repoUrl}: ${r.stderr.trim() || `git ls-remote exited ${r.exitCode}`}`,
      { hint: "give the row a base_commit, or a branch that exists" },
    );
  }
  return { ...task, commit: sha };
}
