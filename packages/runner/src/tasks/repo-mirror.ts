import { stat } from "node:fs/promises";
import { join } from "node:path";

/** Environment variable naming a directory of local git mirrors (`DIR/owner/repo`), like `--repo-mirror`. */
export const REPO_MIRROR_ENV = "FLAKEGYM_REPO_MIRROR";

/**
 * Where a mirror of `owner/repo` may be under `mirror`, in the order looked at: `DIR/owner/repo`,
 * `DIR/owner/repo.git` (a bare `git clone --mirror` is usually named so), `DIR/owner__repo`,
 * `DIR/owner+repo/repo` (a directory of fetched repository snapshots, one `owner+repo/` each). Pure.
 */
export function mirrorCandidates(mirror: string, repo: string): string[] {
  const base = join(mirror, repo);
  return [
    base,
    `${base}.git`,
    join(mirror, repo.replace("/", "__")),
    join(mirror, repo.replace("/", "+"), "repo"),
  ];
}

/** `owner/repo` of an http(s) or ssh clone URL (`https://host/owner/repo.git`), or undefined. Pure. */
export function repoNameOfUrl(url: string): string | undefined {
  const m =
    /^(?:https?:\/\/[^/]+\/|ssh:\/\/[^/]+\/|git@[^:]+:)([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(
      url,
    );
  return m ? `${m[1]}/${m[2]}` : undefined;
}

/** The first existing mirror directory of the repository `url` names, or undefined. */
export async function findMirror(mirror: string | undefined, url: string): Promise<string | undefined> {
  const repo = repoNameOfUrl(url);
  if (!mirror || !repo) return undefined;
  for (const dir of mirrorCandidates(mirror, repo)) {
    if ((await stat(dir).catch(() => undefined))?.isDirectory()) return dir;
  }
  return undefined;
}
