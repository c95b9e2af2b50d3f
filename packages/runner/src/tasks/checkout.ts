import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../errors.js";
import {
  type CheckoutDepth,
  type CheckoutFacts,
  checkoutDepthOf,
  checkoutProblems,
  reachableTagRefspecs,
  remoteTagsOf,
  VERSION_FILES,
} from "./checkout-policy.js";
import { type GitOptions, git, gitEnv } from "./materialize.js";

/**
 * A repository at a base commit, fetched into a fresh repository at `dest` so that it holds what
 * the build needs and nothing from after the base (checkout-policy.ts decides how much). Git runs
 * with no user or system config, no templates (so no hooks) and before any sandbox touched `dest`.
 */

/** The ref the fetch keeps while it works (so a second fetch negotiates against it); deleted after. */
const WORK_REF = "refs/flakegym/base";

export interface CheckoutResult {
  readonly commit: string;
  readonly depth: CheckoutDepth;
  readonly reason: string;
  /** The tags kept (ancestry-and-tags), `refs/tags/…`. */
  readonly tags: readonly string[];
}

/** Fetches `url` at `rev` into the empty directory `dest` (see the module comment), checks it out and verifies it. */
export async function checkoutBase(
  dest: string,
  url: string,
  rev: string,
  opts: Omit<GitOptions, "cwd"> = {},
): Promise<CheckoutResult> {
  const o = { ...opts, cwd: dest };
  await mkdir(dest, { recursive: true });
  await git(["init", "-q", "--template="], o);
  await git(["fetch", "-q", "--no-tags", "--depth", "1", url, `+${rev}:${WORK_REF}`], {
    ...o,
    timeoutMs: 600_000,
  });
  const { depth, reason } = checkoutDepthOf(await versionFiles(o));
  opts.log?.(`checkout: ${reason}`);
  let tags: string[] = [];
  if (depth === "ancestry-and-tags") {
    // a base without parents is complete at depth 1 (git refuses --unshallow then)
    if ((await git(["rev-parse", "--is-shallow-repository"], o)) === "true")
      await git(["fetch", "-q", "--no-tags", "--unshallow", url, `+${rev}:${WORK_REF}`], {
        ...o,
        timeoutMs: 1_800_000,
      });
    tags = await fetchReachableTags(url, o);
    opts.log?.(`checkout: ${tags.length} tag(s) reachable from ${rev}`);
  }
  await git(["checkout", "-q", "--detach", WORK_REF], o);
  await git(["update-ref", "-d", WORK_REF], o);
  await forgetFetchState(dest);
  const commit = await git(["rev-parse", "HEAD"], o);
  const problems = checkoutProblems(await checkoutFacts(dest, rev, o));
  if (problems.length > 0)
    throw new FlakegymError(
      "E_CHECKOUT_LEAK",
      `the checkout of ${url} at ${rev} in ${dest} holds more than the base's history: ${problems.join("; ")}`,
      {
        hint: "this is a flakegym bug: report it with the repository and commit; the snapshot was not built",
      },
    );
  return { commit, depth, reason, tags: tags.map((t) => t.split(":")[1]!) };
}

/** The text of the version files at the fetched base commit (absent ones left out). */
async function versionFiles(o: GitOptions): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of VERSION_FILES) {
    const r = await execa("git", ["cat-file", "blob", `${WORK_REF}:${name}`], {
      cwd: o.cwd,
      env: gitEnv(),
      reject: false,
      timeout: 60_000,
      stdin: "ignore",
      ...(o.signal ? { cancelSignal: o.signal } : {}),
    });
    if (r.exitCode === 0) out[name] = r.stdout.slice(0, 1_000_000);
  }
  return out;
}

/** Fetches the remote's tags whose commit the checkout holds; returns their refspecs. */
async function fetchReachableTags(url: string, o: GitOptions): Promise<string[]> {
  const tags = remoteTagsOf(await git(["ls-remote", "--tags", url], { ...o, log: undefined }));
  if (tags.length === 0) return [];
  const r = await execa("git", ["cat-file", "--batch-check=%(objectname) %(objecttype)"], {
    cwd: o.cwd,
    env: gitEnv(),
    input: `${tags.map((t) => t.commit).join("\n")}\n`,
    timeout: 120_000,
    ...(o.signal ? { cancelSignal: o.signal } : {}),
  });
  const present = new Set(
    r.stdout
      .split("\n")
      .map((l) => l.split(" "))
      .filter((p) => p[1] === "commit")
      .map((p) => p[0]!),
  );
  const specs = reachableTagRefspecs(tags, present);
  if (specs.length === 0) return [];
  o.log?.(`$ git fetch -q --no-tags --stdin ${url} (${specs.length} tag refspecs)`);
  const f = await execa("git", ["fetch", "-q", "--no-tags", "--stdin", url], {
    cwd: o.cwd,
    env: gitEnv(),
    input: `${specs.join("\n")}\n`,
    reject: false,
    timeout: 600_000,
    ...(o.signal ? { cancelSignal: o.signal } : {}),
  });
  if (f.exitCode !== 0)
    throw new FlakegymError(
      "E_GIT",
      `git fetch of ${specs.length} tags from ${url} failed: ${f.stderr.trim()}`,
    );
  return specs;
}

/** Removes what remembers the fetch: FETCH_HEAD, ORIG_HEAD and every reflog. */
async function forgetFetchState(dest: string): Promise<void> {
  for (const f of ["FETCH_HEAD", "ORIG_HEAD", "logs"])
    await rm(join(dest, ".git", f), { recursive: true, force: true });
}

/** Reads what checkoutProblems judges from the checkout's `.git`. */
export async function checkoutFacts(dest: string, base: string, o: GitOptions): Promise<CheckoutFacts> {
  const q = { ...o, cwd: dest, log: undefined };
  const lines = (s: string) => s.split("\n").filter((l) => l !== "");
  const all = lines(
    await git(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)", "--unordered"], q),
  );
  const reached = new Set(
    lines(await git(["rev-list", "--objects", "--all", "--reflog"], q)).map((l) => l.split(" ")[0]!),
  );
  const leftovers = (await readdir(join(dest, ".git"))).filter((f) =>
    ["FETCH_HEAD", "ORIG_HEAD", "logs", "packed-refs.lock"].includes(f),
  );
  return {
    base,
    head: await git(["rev-parse", "HEAD"], q),
    refs: lines(await git(["for-each-ref", "--format=%(refname)"], q)),
    beyondBase: lines(await git(["rev-list", "--all", "--reflog", "--not", base], q)),
    unreachable: all.filter((id) => !reached.has(id)),
    leftovers,
  };
}
