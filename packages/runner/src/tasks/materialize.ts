import { cp, mkdir, stat } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";
import { match } from "ts-pattern";
import { FlakegymError } from "../errors.js";
import type { LoadedTask } from "./catalog.js";
import { type CheckoutResult, checkoutBase } from "./checkout.js";
import { makeOwnerWritable } from "./owner-writable.js";
import { findMirror, REPO_MIRROR_ENV } from "./repo-mirror.js";
import { CATALOG_GIT_IDENTITY } from "./task-spec.js";

/** Environment for git: no user/system config, a fixed identity and date. */
export function gitEnv(): Record<string, string> {
  return {
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: CATALOG_GIT_IDENTITY.name,
    GIT_AUTHOR_EMAIL: CATALOG_GIT_IDENTITY.email,
    GIT_AUTHOR_DATE: CATALOG_GIT_IDENTITY.date,
    GIT_COMMITTER_NAME: CATALOG_GIT_IDENTITY.name,
    GIT_COMMITTER_EMAIL: CATALOG_GIT_IDENTITY.email,
    GIT_COMMITTER_DATE: CATALOG_GIT_IDENTITY.date,
  };
}

export interface GitOptions {
  readonly cwd: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  readonly log?: (line: string) => void;
  /** Return stdout as git wrote it (a diff: its last context lines may be blank, ` \n`), not trimmed. */
  readonly raw?: boolean;
}

/** Runs git; throws a FlakegymError naming the command and showing its stderr on failure. */
export async function git(args: readonly string[], opts: GitOptions): Promise<string> {
  opts.log?.(`$ git ${args.join(" ")}`);
  const r = await execa("git", args, {
    cwd: opts.cwd,
    env: gitEnv(),
    reject: false,
    timeout: opts.timeoutMs ?? 120_000,
    ...(opts.signal ? { cancelSignal: opts.signal } : {}),
    stdin: "ignore",
  });
  if (r.exitCode !== 0) {
    const why = r.timedOut ? `timed out after ${opts.timeoutMs ?? 120_000} ms` : `exit ${r.exitCode}`;
    throw new FlakegymError(
      "E_GIT",
      `git ${args.join(" ")} failed in ${opts.cwd} (${why}): ${r.stderr.trim()}`,
    );
  }
  return opts.raw ? `${r.stdout}\n` : r.stdout.trim();
}

/** Commits every file of `dir` (a fresh repo) with the fixed catalog identity; returns the commit id. */
export async function commitTree(dir: string, opts: Omit<GitOptions, "cwd"> = {}): Promise<string> {
  await git(["init", "-q", "-b", "main"], { ...opts, cwd: dir });
  await git(["add", "-A"], { ...opts, cwd: dir });
  await git(["commit", "-q", "--no-gpg-sign", "--allow-empty", "-m", "task base"], { ...opts, cwd: dir });
  return await git(["rev-parse", "HEAD"], { ...opts, cwd: dir });
}

/**
 * Cheap reachability probe for a remote git URL: `git ls-remote` with a short timeout. Fails fast
 * with a message saying the task needs network, before any clone starts.
 */
export async function probeRemote(
  taskId: string,
  url: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  const local = localRepoPath(url);
  if (local !== undefined && !(await stat(local).catch(() => undefined))?.isDirectory()) {
    throw new FlakegymError(
      "E_REPO_MISSING",
      `task '${taskId}': its repository ${local} does not exist on this machine (a local source, not a network one)`,
      {
        hint: "clone the repository there (or import the rows again with --repo-mirror DIR pointing at your local mirrors)",
      },
    );
  }
  const r = await execa("git", ["ls-remote", "--exit-code", url, "HEAD"], {
    env: gitEnv(),
    reject: false,
    timeout: timeoutMs,
    ...(signal ? { cancelSignal: signal } : {}),
    stdin: "ignore",
  });
  if (r.exitCode !== 0) {
    const why = r.timedOut ? `no answer within ${timeoutMs} ms` : r.stderr.trim().split("\n").pop();
    throw new FlakegymError(
      "E_NETWORK_REQUIRED",
      `task '${taskId}' needs network: cannot reach ${url} (${why})`,
      {
        hint: `this task clones its repository; give a directory of local git mirrors holding it (${REPO_MIRROR_ENV}=DIR with DIR/owner/repo), run it on a machine with network access, or pick an offline task (flakegym tasks list shows network: none)`,
      },
    );
  }
}

/**
 * Puts the task's repository at its fixed commit into `dest` (created): a catalog directory is
 * copied and committed with a fixed identity (its commit id is checked against the spec); a remote
 * source is fetched at `rev` from its local mirror when one exists (FLAKEGYM_REPO_MIRROR), else
 * probed and fetched over the network, and checked out holding nothing from after `rev`
 * (checkout.ts: the base alone, or its history and tags when the package versions from git).
 */
export async function materializeSource(
  task: LoadedTask,
  dest: string,
  opts: {
    signal?: AbortSignal;
    log?: (line: string) => void;
    /** A directory of local git mirrors (default: $FLAKEGYM_REPO_MIRROR); see findMirror. */
    repoMirror?: string;
  } = {},
): Promise<{ commit: string; checkout?: CheckoutRecord }> {
  await mkdir(dest, { recursive: true });
  return await match(task.spec.source)
    .returnType<Promise<{ commit: string; checkout?: CheckoutRecord }>>()
    .with({ kind: "local" }, async (src) => {
      await cp(task.paths.sourceDir!, dest, { recursive: true, verbatimSymlinks: true });
      // a catalog read from the Nix store is read-only: the copy is ours, writable as a checkout is
      await makeOwnerWritable(dest, opts.signal);
      const commit = await commitTree(dest, opts);
      if (commit !== src.commit) {
        throw new FlakegymError(
          "E_CATALOG",
          `task '${task.spec.id}': ${src.dir}/ materialized to commit ${commit}, but task.json field 'source.commit' says ${src.commit}`,
          {
            hint: `if the change to ${src.dir}/ was intended, set source.commit to ${commit} (npm run catalog:commits prints every task's commit)`,
          },
        );
      }
      return { commit };
    })
    .with({ kind: "git" }, async (src) => {
      const mirror = await findMirror(opts.repoMirror ?? process.env[REPO_MIRROR_ENV], src.url);
      if (mirror) opts.log?.(`${src.url} from the local mirror ${mirror}`);
      else await probeRemote(task.spec.id, src.url, src.probeTimeoutMs, opts.signal);
      const r = await checkoutBase(dest, mirror ? pathToFileURL(mirror).href : src.url, src.rev, opts);
      return { commit: r.commit, checkout: checkoutRecordOf(r) };
    })
    .exhaustive();
}

/** The filesystem path a clone URL names (an absolute path or a `file://` URL), or undefined. Pure. */
export function localRepoPath(url: string): string | undefined {
  if (url.startsWith("file://")) return fileURLToPath(url);
  return url.startsWith("/") ? url : undefined;
}

/** What a snapshot's manifest keeps of a checkout: how deep, why, and how many tags. */
export interface CheckoutRecord {
  readonly depth: CheckoutResult["depth"];
  readonly reason: string;
  readonly tags: number;
}

/** The manifest's record of a checkout. Pure. */
export function checkoutRecordOf(r: CheckoutResult): CheckoutRecord {
  return { depth: r.depth, reason: r.reason, tags: r.tags.length };
}
