/**
 * What a task's checkout holds, decided from data (checkout.ts runs it). A repository whose
 * packaging versions itself from git (setuptools-scm, versioneer, `git describe`) gets the base
 * commit's whole ancestry and the tags that point into it, so its build sees the version upstream
 * saw (pytest 7.2.0.dev…, not 0.1.dev1); any other gets the base commit alone (depth 1), which is
 * what its build needs and far cheaper (sympy: 2.5 s and 7 MB shallow, 116 s and 182 MB with its
 * history). Either way nothing reachable only from later history is fetched, and the result is
 * verified (verifyCheckout). Pure.
 */

/** Bumped when what a checkout holds changes (part of every git source's snapshot key). */
export const CHECKOUT_POLICY_VERSION = 2;

/** How much of the repository the checkout fetches. */
export type CheckoutDepth = "base-only" | "ancestry-and-tags";

/** The files at the repository root whose text says how the package gets its version. */
export const VERSION_FILES = ["pyproject.toml", "setup.cfg", "setup.py", ".git_archival.txt"] as const;

/** Text that means "the version comes from git": setuptools-scm, versioneer, hatch-vcs, pbr, `git describe`. */
const FROM_GIT =
  /setuptools[_-]scm|use_scm_version|versioneer|hatch[_-]vcs|\[tool\.hatch\.version\][^[]*source\s*=\s*"vcs"|\bpbr\b|git describe|\$Format:/;

/**
 * Which checkout a repository needs, from the text of its VERSION_FILES at the base commit
 * (absent files left out), and why. Pure.
 */
export function checkoutDepthOf(files: Readonly<Record<string, string>>): {
  depth: CheckoutDepth;
  reason: string;
} {
  for (const name of VERSION_FILES) {
    const m = FROM_GIT.exec(files[name] ?? "");
    if (m)
      return {
        depth: "ancestry-and-tags",
        reason: `${name} versions the package from git ('${m[0]}'): the base commit's history and its tags are fetched`,
      };
  }
  return {
    depth: "base-only",
    reason: `no ${VERSION_FILES.join(", ")} versions the package from git: the base commit alone is fetched`,
  };
}

/** One tag as `git ls-remote --tags` lists it: the ref, and the commit it points at (peeled). */
export interface RemoteTag {
  readonly ref: string;
  readonly commit: string;
}

/**
 * The tags of `git ls-remote --tags` output, each with the commit it points at: an annotated tag's
 * `^{}` line wins over its tag object's line. Refs that are not plain tag names are dropped. Pure.
 */
export function remoteTagsOf(lsRemote: string): RemoteTag[] {
  const peeled = new Map<string, string>();
  for (const line of lsRemote.split("\n")) {
    const m = /^([0-9a-f]{40,64})\s+(refs\/tags\/[^\s]+?)(\^\{\})?$/.exec(line.trim());
    if (!m) continue;
    const [, sha, ref, peel] = m as unknown as [string, string, string, string | undefined];
    if (!/^refs\/tags\/[A-Za-z0-9][A-Za-z0-9._/+-]*$/.test(ref) || ref.includes("..")) continue;
    if (peel !== undefined || !peeled.has(ref)) peeled.set(ref, sha);
  }
  return [...peeled].map(([ref, commit]) => ({ ref, commit })).sort((a, b) => a.ref.localeCompare(b.ref));
}

/**
 * The tags to fetch: those whose commit the checkout already holds (it holds only the base commit's
 * ancestry, so these are exactly the tags reachable from it), as `+ref:ref` refspecs. Pure.
 */
export function reachableTagRefspecs(tags: readonly RemoteTag[], present: ReadonlySet<string>): string[] {
  return tags.filter((t) => present.has(t.commit)).map((t) => `+${t.ref}:${t.ref}`);
}

/** What verifyCheckout read from the checkout's `.git`. */
export interface CheckoutFacts {
  readonly base: string;
  /** `git rev-parse HEAD`. */
  readonly head: string;
  /** Every ref (`git for-each-ref --format=%(refname)`). */
  readonly refs: readonly string[];
  /** Commits reachable from any ref or HEAD but not from the base (`git rev-list --all --not base`). */
  readonly beyondBase: readonly string[];
  /** Objects in the store that no ref reaches (dangling, or left by a fetch). */
  readonly unreachable: readonly string[];
  /** Files under `.git` that remember other states: FETCH_HEAD, ORIG_HEAD, logs/. */
  readonly leftovers: readonly string[];
}

/**
 * Whether a checkout holds anything from after its base: the problems, one line each (empty when
 * clean). HEAD must be the base; refs may only be tags; no commit past the base, no unreachable
 * object, no reflog or FETCH_HEAD. Pure.
 */
export function checkoutProblems(f: CheckoutFacts): string[] {
  const out: string[] = [];
  if (f.head !== f.base) out.push(`HEAD is ${f.head}, not the base ${f.base}`);
  const foreign = f.refs.filter((r) => !r.startsWith("refs/tags/"));
  if (foreign.length > 0) out.push(`refs other than tags: ${foreign.slice(0, 5).join(", ")}`);
  if (f.beyondBase.length > 0)
    out.push(
      `${f.beyondBase.length} commit(s) not in the base's history (${f.beyondBase.slice(0, 3).join(", ")})`,
    );
  if (f.unreachable.length > 0)
    out.push(`${f.unreachable.length} object(s) no ref reaches (${f.unreachable.slice(0, 3).join(", ")})`);
  if (f.leftovers.length > 0) out.push(`leftover state: ${f.leftovers.join(", ")}`);
  return out;
}
