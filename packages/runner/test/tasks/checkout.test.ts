import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutBase } from "../../src/tasks/checkout.js";
import {
  checkoutDepthOf,
  checkoutProblems,
  reachableTagRefspecs,
  remoteTagsOf,
} from "../../src/tasks/checkout-policy.js";
import { git } from "../../src/tasks/materialize.js";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-checkout-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("checkoutDepthOf", () => {
  it("fetches history and tags only where the package versions from git", () => {
    expect(
      checkoutDepthOf({ "pyproject.toml": '[build-system]\nrequires = ["setuptools-scm[toml]>=6.2.3"]' }),
    ).toMatchObject({ depth: "ancestry-and-tags", reason: expect.stringContaining("pyproject.toml") });
    expect(checkoutDepthOf({ "setup.py": "setup(use_scm_version={'write_to': 'x'})" }).depth).toBe(
      "ancestry-and-tags",
    );
    expect(checkoutDepthOf({ "setup.cfg": "[versioneer]\nVCS = git" }).depth).toBe("ancestry-and-tags");
    expect(
      checkoutDepthOf({ "setup.py": "setup(name='requests', version=about['__version__'])" }),
    ).toMatchObject({ depth: "base-only", reason: expect.stringContaining("base commit alone") });
    expect(checkoutDepthOf({}).depth).toBe("base-only");
  });
});

describe("tag selection", () => {
  const ls = [
    `${"a".repeat(40)}\trefs/tags/1.0`,
    `${"b".repeat(40)}\trefs/tags/1.0^{}`,
    `${"c".repeat(40)}\trefs/tags/2.0`,
    `${"d".repeat(40)}\trefs/tags/bad..name`,
    `${"e".repeat(40)}\trefs/pull/12/head`,
  ].join("\n");
  it("peels annotated tags and drops refs that are not plain tag names", () => {
    expect(remoteTagsOf(ls)).toEqual([
      { ref: "refs/tags/1.0", commit: "b".repeat(40) },
      { ref: "refs/tags/2.0", commit: "c".repeat(40) },
    ]);
  });
  it("keeps the tags whose commit the base's history holds", () => {
    expect(reachableTagRefspecs(remoteTagsOf(ls), new Set(["b".repeat(40)]))).toEqual([
      "+refs/tags/1.0:refs/tags/1.0",
    ]);
  });
});

describe("checkoutProblems", () => {
  const clean = {
    base: "x",
    head: "x",
    refs: ["refs/tags/1.0"],
    beyondBase: [],
    unreachable: [],
    leftovers: [],
  };
  it("is empty for a clean checkout and names every kind of leak", () => {
    expect(checkoutProblems(clean)).toEqual([]);
    const p = checkoutProblems({
      ...clean,
      head: "y",
      refs: ["refs/tags/1.0", "refs/heads/main"],
      beyondBase: ["f1"],
      unreachable: ["o1"],
      leftovers: ["FETCH_HEAD"],
    });
    expect(p).toHaveLength(5);
    expect(p.join("\n")).toMatch(/HEAD is y.*\n.*refs\/heads\/main.*\n.*f1.*\n.*o1.*\n.*FETCH_HEAD/s);
  });
});

/** A mirror with history: v1.0 → base → fix (later, tagged v2.0), plus a pull ref past the base. */
async function mirrorWithFuture(scm: boolean) {
  const dir = join(tmp, `upstream-${scm ? "scm" : "plain"}`);
  await mkdir(dir, { recursive: true });
  const g = (args: string[]) => git(args, { cwd: dir });
  await g(["init", "-q", "-b", "main"]);
  const commit = async (file: string, text: string, msg: string) => {
    await writeFile(join(dir, file), text);
    await g(["add", "-A"]);
    await g(["commit", "-q", "-m", msg]);
    return await g(["rev-parse", "HEAD"]);
  };
  await commit("pyproject.toml", scm ? 'requires = ["setuptools_scm"]\n' : "[project]\nname='x'\n", "one");
  await g(["tag", "-a", "v1.0", "-m", "release 1.0"]);
  await commit("lib.py", "x = 1\n", "two");
  await g(["tag", "v1.1"]);
  const base = await commit("lib.py", "x = 2\n", "base");
  const fix = await commit("lib.py", "x = 3  # the fix\n", "the fix");
  await g(["tag", "-a", "v2.0", "-m", "release 2.0"]);
  await g(["update-ref", "refs/pull/7/head", fix]);
  return { dir, base, fix };
}

describe("checkoutBase (real git)", () => {
  it("a git-versioned repository keeps its history and earlier tags, and nothing after the base", async () => {
    const m = await mirrorWithFuture(true);
    const dest = join(tmp, "ws-scm");
    const r = await checkoutBase(dest, pathToFileURL(m.dir).href, m.base);
    expect(r).toMatchObject({ commit: m.base, depth: "ancestry-and-tags" });
    expect([...r.tags].sort()).toEqual(["refs/tags/v1.0", "refs/tags/v1.1"]);
    const g = (args: string[]) => git(args, { cwd: dest });
    expect(await g(["describe", "--tags", "--long"])).toMatch(/^v1\.1-1-g/);
    expect(await g(["show", "HEAD:lib.py"])).toBe("x = 2");
    // the fix and the later tag are no `git log --all` / `cat-file --batch-all-objects` away
    expect(await g(["log", "--all", "--reflog", "--format=%H"])).not.toContain(m.fix);
    const objects = await g(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]);
    expect(objects).not.toContain(m.fix);
    expect(await g(["tag"])).not.toContain("v2.0");
    await expect(g(["cat-file", "-e", m.fix])).rejects.toThrow();
  });

  it("a git-versioned repository whose base is its root commit needs no unshallowing", async () => {
    const dir = join(tmp, "upstream-root");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "setup.py"), "setup(use_scm_version=True)\n");
    const base = await (async () => {
      const g = (args: string[]) => git(args, { cwd: dir });
      await g(["init", "-q", "-b", "main"]);
      await g(["add", "-A"]);
      await g(["commit", "-q", "-m", "root"]);
      await g(["tag", "v0.1"]);
      return await g(["rev-parse", "HEAD"]);
    })();
    const r = await checkoutBase(join(tmp, "ws-root"), pathToFileURL(dir).href, base);
    expect(r).toMatchObject({ commit: base, depth: "ancestry-and-tags", tags: ["refs/tags/v0.1"] });
  });

  it("any other repository gets the base commit alone", async () => {
    const m = await mirrorWithFuture(false);
    const dest = join(tmp, "ws-plain");
    const r = await checkoutBase(dest, pathToFileURL(m.dir).href, m.base);
    expect(r).toMatchObject({ commit: m.base, depth: "base-only", tags: [] });
    const g = (args: string[]) => git(args, { cwd: dest });
    expect(await g(["rev-list", "--all", "--count"])).toBe("1");
    expect(await g(["for-each-ref"])).toBe("");
  });
});
