import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutBase } from "../../packages/runner/src/tasks/checkout.js";
import { mirrorCandidates } from "../../packages/runner/src/tasks/repo-mirror.js";

/**
 * The checkout of a real git-versioned repository (pytest, setuptools-scm) at a base whose fix is in
 * the mirror's later history (`npm run e2e:real`): the workspace's `.git` holds the base's history
 * and the tags reachable from it — so the package versions as upstream's did — and nothing a
 * `git log --all` or `cat-file --batch-all-objects` away from the fix. The base is the merge base of
 * pytest's PR #10081 (fix bd642fac, merged as 06738e36; tags 7.2.0 and later come after it).
 */

const MIRRORS = process.env.FLAKEGYM_REPO_MIRROR;
const BASE = "da9a2b584eb7a6c7e924b2621ed0ddaeca0a7bea";
const FIX = "bd642fac70275133e8741a25aa652d7537c4b3db";
const MERGE = "06738e36dfa0492970017637a1b28f853c229471";

async function mirror(): Promise<string | undefined> {
  if (!MIRRORS) return undefined;
  for (const p of mirrorCandidates(MIRRORS, "pytest-dev/pytest")) {
    const r = await execa("git", ["-C", p, "cat-file", "-e", `${FIX}^{commit}`], { reject: false });
    if (r.exitCode === 0) return p;
  }
  return undefined;
}

const found = await mirror();
const skipReason = found
  ? undefined
  : `no mirror of pytest-dev/pytest holding ${FIX} under FLAKEGYM_REPO_MIRROR (${MIRRORS ?? "unset"})`;
if (skipReason) console.warn(`checkout-leak: skipped — ${skipReason}`);

describe.skipIf(skipReason !== undefined)("checkout of a real repository with later history", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-checkout-leak-");
  });
  afterAll(async () => {
    await tmp.cleanup();
  });

  it("keeps pytest's history and earlier tags, and not the fix, its merge or any later tag", async () => {
    const m = found!;
    const later = (await execa("git", ["-C", m, "tag", "--contains", MERGE])).stdout
      .split("\n")
      .filter(Boolean);
    expect(later, "the mirror has tags after the fix").toContain("7.2.0");
    const dest = join(tmp.path, "ws");
    const t0 = performance.now();
    const r = await checkoutBase(dest, pathToFileURL(m).href, BASE);
    console.log(
      `checkout-leak: pytest @ ${BASE.slice(0, 8)}: ${r.tags.length} tags, ${Math.round(performance.now() - t0)} ms`,
    );
    expect(r).toMatchObject({ commit: BASE, depth: "ancestry-and-tags" });
    const g = async (...args: string[]) => (await execa("git", args, { cwd: dest })).stdout;
    // what setuptools-scm reads: the nearest tag and the distance to it
    expect(await g("describe", "--tags", "--long")).toMatch(/^7\.2\.0\.dev0-173-gda9a2b584$/);
    const tags = (await g("tag")).split("\n");
    // exactly the mirror's tags reachable from the base (7.2.0.dev0 the nearest)
    const merged = (await execa("git", ["-C", m, "tag", "--merged", BASE])).stdout.split("\n");
    expect(tags.sort()).toEqual(merged.sort());
    for (const t of later) expect(tags).not.toContain(t);
    for (const c of [FIX, MERGE]) {
      const e = await execa("git", ["cat-file", "-e", c], { cwd: dest, reject: false });
      expect(e.exitCode, `${c} must not be in the workspace's objects`).not.toBe(0);
    }
    expect(await g("log", "--all", "--reflog", "--format=%H")).not.toContain(FIX);
    const all = await g("cat-file", "--batch-all-objects", "--batch-check=%(objectname)");
    expect(all).not.toContain(FIX);
    expect(all).not.toContain(MERGE);
    expect(
      (await g("for-each-ref", "--format=%(refname)")).split("\n").every((x) => x.startsWith("refs/tags/")),
    ).toBe(true);
  });
});
