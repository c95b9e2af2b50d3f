// Types of workspace-diff.mjs (plain JS so cline-supervisor can ship it next to itself).

/** `$GIT_DIR/info/attributes` that overrides every in-tree .gitattributes. */
export declare const NEUTRAL_ATTRIBUTES: string;
export declare const DEFAULT_MAX_FILE_BYTES: number;
export declare const DEFAULT_MAX_TOTAL_BYTES: number;
export declare const MAX_EXCLUDED_LISTED: number;

export type WorkspaceDiffErrorCode = "E_DIFF_UNSAFE" | "E_DIFF_BASE" | "E_DIFF_GIT" | "E_DIFF_ARGUMENT";

/**
 * E_DIFF_UNSAFE: the workspace holds something git must not read (the agent's doing: record it,
 * the diff is empty); E_DIFF_BASE: the base objects lack the base commit; E_DIFF_GIT: git failed or
 * timed out; E_DIFF_ARGUMENT: a caller's mistake.
 */
export declare class WorkspaceDiffError extends Error {
  readonly code: WorkspaceDiffErrorCode;
  readonly hint: string | undefined;
  constructor(code: WorkspaceDiffErrorCode, message: string, hint?: string);
}

/** A path left out of the diff, and why (e.g. "a fifo, not a file"). */
export interface ExcludedPath {
  readonly path: string;
  readonly reason: string;
}

export interface WorkspaceDiffOptions {
  /** Absolute path of the agent's work tree; read as data only. */
  readonly workspace: string;
  /** The snapshot's commit (full hex id); never the workspace's HEAD. */
  readonly baseCommit: string;
  /** An objects directory holding `baseCommit` that the agent cannot write (no alternates of its own). */
  readonly baseObjects: string;
  /** Bound on the whole computation, ms. Default 60 000. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Files larger than this are left out (recorded). Default 16 MiB. */
  readonly maxFileBytes?: number;
  /** Total bytes of files git may read. Default 256 MiB. */
  readonly maxTotalBytes?: number;
  /** Where the throw-away repository is made. Default: the OS temp dir. */
  readonly scratchDir?: string;
  /** The git binary. Default "git" (from PATH). */
  readonly git?: string;
}

export interface WorkspaceDiff {
  /** `git diff --binary` of the base against the workspace (untracked, not ignored files included). */
  readonly patch: Buffer;
  readonly baseCommit: string;
  /** Paths left out (at most MAX_EXCLUDED_LISTED). */
  readonly excluded: readonly ExcludedPath[];
  readonly excludedTotal: number;
}

export declare function workspaceDiff(options: WorkspaceDiffOptions): Promise<WorkspaceDiff>;

export type Probe =
  | { readonly kind: "file"; readonly size: number }
  | { readonly kind: "missing" | "beyond-symlink" | "dir" | "symlink" | "fifo" | "socket" | "device" };

export declare function probePath(root: string, rel: string): Promise<Probe>;

export interface PlanLimits {
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
  /** Bytes still allowed. */
  readonly budget: number;
}

export declare function planEntry(
  path: string,
  tracked: { readonly mode: string } | undefined,
  probe: Probe,
  limits: PlanLimits,
): { action: "update" | "remove" | "keep"; reason?: string; bytes?: number };

export declare function preWalk(workspace: string, deadline: number): Promise<ExcludedPath[]>;

export type ContainedRead =
  | { readonly kind: "file"; readonly data: Buffer }
  | { readonly kind: "missing" }
  | { readonly kind: "refused"; readonly reason: string };

/** Reads `root/rel` without following links or leaving `root` (see the implementation). */
export declare function readContained(
  root: string,
  rel: string,
  options: { maxBytes: number },
): ContainedRead;

/** Copies `baseCommit`'s closure into a self-contained bare repository; returns its objects dir. */
export declare function sealBase(options: {
  sourceObjects: string;
  baseCommit: string;
  dir: string;
  git?: string;
  timeoutMs?: number;
}): Promise<string>;

/** The commit `repo/.git/HEAD` names, read as data; undefined when there is none. */
export declare function readHead(repo: string): string | undefined;

export interface CommitWorkspaceOptions extends WorkspaceDiffOptions {
  /** Author and committer of the new commit (a fixed date makes it reproducible). */
  readonly identity: { readonly name: string; readonly email: string; readonly date: string };
  readonly message: string;
}

export interface CommittedWorkspace {
  /** The new commit, or `baseCommit` when the workspace had no change. */
  readonly commit: string;
  /** Paths the new commit changes against `baseCommit`, sorted. */
  readonly changed: readonly string[];
  readonly excluded: readonly ExcludedPath[];
  readonly excludedTotal: number;
}

/**
 * Commits the workspace's tree (as workspaceDiff sees it) on top of `baseCommit`, writing the new
 * objects into `baseObjects`, and points the workspace's `.git/HEAD` and index at it. Only while
 * the workspace is still ours (a snapshot build, before any agent).
 */
export declare function commitWorkspace(options: CommitWorkspaceOptions): Promise<CommittedWorkspace>;
