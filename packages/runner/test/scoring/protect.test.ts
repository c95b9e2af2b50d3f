import { describe, expect, it } from "vitest";
import { isNewTestFile, matchesPattern, protectDiff, protectedReason } from "../../src/scoring/protect.js";

const section = (path: string, kind: "new" | "edit" | "symlink" = "edit") =>
  [
    `diff --git a/${path} b/${path}`,
    ...(kind === "new"
      ? ["new file mode 100644", "--- /dev/null"]
      : kind === "symlink"
        ? ["new file mode 120000", "--- /dev/null"]
        : ["index 1111111..2222222 100644", `--- a/${path}`]),
    `+++ b/${path}`,
    "@@ -0,0 +1 @@",
    "+x",
    "",
  ].join("\n");

const rules = { protected: [], allowEdits: [], testDirs: ["tests"] };

describe("matchesPattern", () => {
  it("a name matches at any depth, a dir/ anywhere in the path, a path with / from the root", () => {
    expect(matchesPattern("conftest.py", "conftest.py")).toBe(true);
    expect(matchesPattern("a/b/conftest.py", "conftest.py")).toBe(true);
    expect(matchesPattern("a/myconftest.py", "conftest.py")).toBe(false);
    expect(matchesPattern("lib/rules.mk", "*.mk")).toBe(true);
    expect(matchesPattern("x/.cargo/config.toml", ".cargo/")).toBe(true);
    expect(matchesPattern(".cargo", ".cargo/")).toBe(false);
    expect(matchesPattern("a/node_modules/p/index.js", "node_modules/")).toBe(true);
    expect(matchesPattern("ci/run.sh", "ci/*.sh")).toBe(true);
    expect(matchesPattern("x/ci/run.sh", "ci/*.sh")).toBe(false);
    expect(matchesPattern("./vitest.config.ts", "vitest.config.*")).toBe(true);
  });
});

describe("protectedReason", () => {
  it("protects harness files, existing files in test dirs and collection hooks, not new tests or code", () => {
    expect(protectedReason("Cargo.toml", false, rules)).toMatch(
      /harness or build file \(matches 'Cargo.toml'\)/,
    );
    expect(protectedReason("GNUmakefile", true, rules)).toMatch(/GNUmakefile/);
    expect(protectedReason("src/pkg/sitecustomize.py", true, rules)).toMatch(/sitecustomize/);
    expect(protectedReason("tests/check.h", false, rules)).toBe(
      "existing file in the test directory 'tests'",
    );
    expect(protectedReason("tests/__init__.py", true, rules)).toMatch(/collection hook/);
    expect(protectedReason("tests/test_new.py", true, rules)).toBeUndefined();
    expect(protectedReason("src/lib.rs", false, rules)).toBeUndefined();
    expect(protectedReason("testsuite/x.c", false, rules)).toBeUndefined();
  });

  it("protects every file a build, test or lint tool finds on its own, at any depth (its documented lookup)", () => {
    const found = [
      // make's lookup order, a nested module boundary, cargo's and clippy's upward lookups
      "GNUmakefile",
      "sub/makefile",
      "width/go.mod",
      "go.work.sum",
      "vendor/modules.txt",
      "crates/a/.cargo/config.toml",
      "clippy.toml",
      ".clippy.toml",
      // tsc's project file (its `paths` remaps imports), Babel/SWC transforms, Yarn's PnP loader
      "tsconfig.json",
      "packages/a/tsconfig.build.json",
      "jsconfig.json",
      ".babelrc",
      "babel.config.cjs",
      ".swcrc",
      ".pnp.cjs",
      ".pnp.loader.mjs",
      "biome.json",
      "eslint.config.js",
      ".eslintrc.json",
      // python linters, editable installs, interpreter pins
      "ruff.toml",
      ".flake8",
      ".pylintrc",
      "mypy.ini",
      "src/pkg.egg-link",
      ".python-version",
      ".golangci.yml",
      ".tool-versions",
    ];
    for (const p of found) expect(protectedReason(p, true, rules), p).toMatch(/harness or build file/);
    // code that merely looks like config is code
    for (const p of ["src/tsconfig.ts", "src/go_mod.go", "docs/vendor.md", "pkg/vendor/x.go", "src/babel.js"])
      expect(protectedReason(p, true, rules), p).toBeUndefined();
  });

  it("allowEdits lets a task's legitimate edit through; the task adds its own patterns", () => {
    expect(protectedReason("Cargo.toml", false, { ...rules, allowEdits: ["Cargo.toml"] })).toBeUndefined();
    expect(protectedReason("ci/run.sh", false, { ...rules, protected: ["ci/*.sh"] })).toMatch(/ci\/\*\.sh/);
  });
});

describe("isNewTestFile", () => {
  it("knows the test files runners discover on their own, in every language", () => {
    for (const p of [
      "zz_main_test.go",
      "tests/test_x.py",
      "a/b_test.py",
      "test/x.test.mjs",
      "src/y.spec.ts",
      "tests/test_z.c",
      "tests/more.rs",
    ])
      expect(isNewTestFile(p), p).toBe(true);
    for (const p of [
      "src/lib.rs",
      "pkg/testing.py",
      "tests/helpers.py",
      "src/contest.js",
      "tests/check.h",
      "crates/a/src/tests.rs",
    ])
      expect(isNewTestFile(p), p).toBe(false);
  });
});

describe("protectDiff", () => {
  it("drops protected sections and symlinks, keeps the rest verbatim, names every dropped path; the agent's new tests are ignored, not tampering", () => {
    const diff = [
      section("src/lib.rs"),
      section("build.rs", "new"),
      section("tests/mine.rs", "new"),
      section("tests/check.h"),
      section("src/link", "symlink"),
    ].join("");
    const p = protectDiff(diff, rules);
    expect(p.diff).toBe(section("src/lib.rs"));
    expect(p.tampered).toEqual(["build.rs", "src/link", "tests/check.h"]);
    expect(p.ignored).toEqual(["tests/mine.rs"]);
    expect(p.why).toEqual({
      "build.rs": "harness or build file (matches 'build.rs')",
      "src/link": "symbolic link",
      "tests/check.h": "existing file in the test directory 'tests'",
    });
  });

  it("a dataset row (keepNewTests) keeps the agent's new tests in the scored tree; build files are still dropped", () => {
    const diff = [section("src/lib.rs"), section("tests/mine.rs", "new"), section("Makefile")].join("");
    const p = protectDiff(diff, { protected: [], allowEdits: [], testDirs: [], keepNewTests: true });
    expect(p.diff).toBe(section("src/lib.rs") + section("tests/mine.rs", "new"));
    expect(p).toMatchObject({ tampered: ["Makefile"], ignored: [] });
  });

  it("a retargeted symbolic link is dropped like a new one; a file whose text mentions the mode is not", () => {
    const retarget = [
      "diff --git a/src/current b/src/current",
      "index 1111111..2222222 120000",
      "--- a/src/current",
      "+++ b/src/current",
      "@@ -1 +1 @@",
      "-v1",
      "\\ No newline at end of file",
      "+../tests/test_a.py",
      "\\ No newline at end of file",
      "",
    ].join("\n");
    const text = section("src/notes.txt").replace("+x", "+index 1111111..2222222 120000");
    const p = protectDiff(retarget + text, rules);
    expect(p.tampered).toEqual(["src/current"]);
    expect(p.why["src/current"]).toBe("symbolic link");
    expect(p.diff).toBe(text);
  });

  it("a rename out of a protected path counts as an edit of it", () => {
    const diff = [
      "diff --git a/Makefile b/src/old.mk.txt",
      "similarity index 100%",
      "rename from Makefile",
      "rename to src/old.mk.txt",
      "",
    ].join("\n");
    expect(protectDiff(diff, rules)).toMatchObject({ diff: "", tampered: ["Makefile"] });
  });
});

describe("protectDiff's cost is the agent's to choose (red team 2026-12-07 night)", () => {
  it("a diff of 5 000 new one-line files is read in seconds, each protected one still dropped", () => {
    // main compiled every default pattern for every side of every section: 12 s of the scorer's
    // event loop for this diff on 2 loaded cores, 53 s for 20 000 files
    const file = (p: string) =>
      `diff --git a/${p} b/${p}\nnew file mode 100644\n--- /dev/null\n+++ b/${p}\n@@ -0,0 +1 @@\n+x\n`;
    const diff = [
      ...Array.from({ length: 4_999 }, (_, i) => file(`src/f${i}.py`)),
      file("pkg/Makefile"),
    ].join("");
    const started = performance.now();
    const out = protectDiff(diff, { protected: [], allowEdits: [], testDirs: ["tests"] });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(out.tampered).toEqual(["pkg/Makefile"]);
    expect(out.diff.split("diff --git ").length - 1).toBe(4_999);
  });
});
