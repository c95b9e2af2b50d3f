import { type FileDiff, splitDiff } from "../text/diff.js";

/**
 * Which of the agent's edits scoring keeps. Everything that decides how the hidden tests are built,
 * discovered and run — build files and build scripts, test-runner configuration, interpreter
 * start-up hooks, dependency manifests, existing files in the test directories — is reset to the
 * snapshot's version by dropping the agent's diff sections there before the diff is applied to a
 * clean fork. Every dropped path is recorded (`tampered`). New test files (the agent's own tests)
 * are left out of the scoring tree and recorded as `ignored`. Pure.
 *
 * Pattern syntax: `name` (no `/`) matches a file with that base name at any depth (`*` and `?`
 * are globs within one name); `dir/` (trailing `/`) matches everything under a directory of that
 * name at any depth; `a/b` matches the workspace-relative path from the root.
 */

/**
 * Harness, build and tool-configuration files of every language, protected in every task (the
 * union is cheap and safe). The rule behind the list: every file a build, test or lint tool finds
 * on its own by its documented lookup (a name in the working directory or any parent, a `paths`
 * map, a loader hook) decides how the agent's code is built and judged, so it is the snapshot's.
 */
export const DEFAULT_PROTECTED: readonly string[] = [
  // make (GNU make reads GNUmakefile, makefile, Makefile in that order), cmake, autotools, meson
  "Makefile",
  "makefile",
  "GNUmakefile",
  "*.mk",
  "Makefile.am",
  "Makefile.in",
  "configure.ac",
  "CMakeLists.txt",
  "CMakePresets.json",
  "CMakeUserPresets.json",
  "*.cmake",
  "configure",
  "meson.build",
  "meson.options",
  "meson_options.txt",
  // rust: cargo reads .cargo/config.toml in every parent; clippy and rustfmt look upward too
  "Cargo.toml",
  "Cargo.lock",
  "build.rs",
  ".cargo/",
  "rust-toolchain",
  "rust-toolchain.toml",
  "clippy.toml",
  ".clippy.toml",
  "rustfmt.toml",
  ".rustfmt.toml",
  // python: runner and linter config files, start-up hooks, editable-install links, interpreter pins
  "conftest.py",
  "pytest.ini",
  ".pytest.ini",
  "pytest.toml",
  ".pytest.toml",
  "tox.ini",
  "setup.cfg",
  "setup.py",
  "pyproject.toml",
  "sitecustomize.py",
  "usercustomize.py",
  "*.pth",
  "*.egg-link",
  ".coveragerc",
  "ruff.toml",
  ".ruff.toml",
  ".flake8",
  "pylintrc",
  ".pylintrc",
  "mypy.ini",
  ".mypy.ini",
  ".python-version",
  // node: manifests and lock files, package-manager settings and loaders (Yarn PnP), runner
  // configs, and compiler configs (tsc finds tsconfig.json upward; its `paths` remaps imports)
  "package.json",
  "package-lock.json",
  "npm-shrinkwrap.json",
  "yarn.lock",
  "pnpm-lock.yaml",
  "pnpm-workspace.yaml",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".pnpmfile.cjs",
  ".pnp.cjs",
  ".pnp.loader.mjs",
  "bunfig.toml",
  "deno.json",
  "deno.jsonc",
  "node_modules/",
  "jest.config.*",
  "vitest.config.*",
  "vite.config.*",
  "vitest.workspace.*",
  "ava.config.*",
  ".mocharc*",
  ".node-version",
  ".nvmrc",
  "tsconfig.json",
  "tsconfig.*.json",
  "jsconfig.json",
  ".babelrc",
  ".babelrc.*",
  "babel.config.*",
  ".swcrc",
  "biome.json",
  "biome.jsonc",
  ".eslintrc*",
  "eslint.config.*",
  // go: module files (a nested go.mod takes its directory out of `./...`), vendored module list
  // (a vendor/ directory with one replaces the module cache), linter config
  "go.mod",
  "go.sum",
  "go.work",
  "go.work.sum",
  "vendor/modules.txt",
  ".golangci.*",
  // git and environment
  ".gitattributes",
  ".gitmodules",
  ".envrc",
  ".tool-versions",
  ".git/",
];

/** Base names that are code the test runner executes when a test directory is collected. */
const TEST_DIR_HOOKS = new Set(["__init__.py"]);

export interface ProtectRules {
  /** Task patterns added to {@link DEFAULT_PROTECTED}. */
  readonly protected: readonly string[];
  /** Patterns the task allows the agent to edit although they are protected (e.g. a dependency bump). */
  readonly allowEdits: readonly string[];
  /** Directories (workspace-relative, no trailing `/`) holding the hidden tests. */
  readonly testDirs: readonly string[];
  /**
   * Keep the agent's new test files in the scored tree (a dataset row: no hidden tests run, and the
   * build and lint terms judge every file the change adds). Default false: left out, `ignored`.
   */
  readonly keepNewTests?: boolean;
}

export interface ProtectedDiff {
  /** The agent's diff without the dropped sections. */
  readonly diff: string;
  /**
   * The agent's own new test files, left out of the hidden-test run (an allowlist: the scoring
   * tree is the snapshot, the hidden tests and the agent's changes to the code, never tests or
   * test entry points the agent wrote — a new `*_test.go` with a `TestMain`, a `test_*.c` the
   * Makefile globs). Not tampering: writing tests is what a task asks for.
   */
  readonly ignored: string[];
  /** Paths whose edits were dropped, sorted. */
  readonly tampered: string[];
  /** Why each path was dropped (same keys as `tampered`). */
  readonly why: Readonly<Record<string, string>>;
}

/**
 * Compiled once per pattern: every side of every section of the agent's diff is tested against
 * the ~90 default patterns, and compiling them per test made a diff of 20 000 new one-line files
 * hold the scorer's event loop for 53 s (2 000 files: 8.8 s, on 2 loaded cores). Patterns come
 * from the defaults and task specs, a small set; the memo is emptied past 4 096 all the same.
 */
const compiled = new Map<string, RegExp>();
const globToRegExp = (glob: string): RegExp => {
  const hit = compiled.get(glob);
  if (hit) return hit;
  if (compiled.size >= 4096) compiled.clear();
  const re = new RegExp(
    `^${glob
      .split("")
      .map((c) => (c === "*" ? "[^/]*" : c === "?" ? "[^/]" : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
      .join("")}$`,
  );
  compiled.set(glob, re);
  return re;
};

/** Whether workspace-relative `path` matches `pattern` (syntax in the module comment). Pure. */
export function matchesPattern(path: string, pattern: string): boolean {
  const p = path.replace(/^\.\//, "");
  if (pattern.endsWith("/")) {
    const dir = globToRegExp(pattern.slice(0, -1));
    return p
      .split("/")
      .slice(0, -1)
      .some((part) => dir.test(part));
  }
  if (!pattern.includes("/")) return globToRegExp(pattern).test(p.slice(p.lastIndexOf("/") + 1));
  return globToRegExp(pattern.replace(/^\.\//, "")).test(p);
}

const inDir = (path: string, dir: string) => dir === "" || dir === "." || path.startsWith(`${dir}/`);

/** Why `path` (one side of a diff section) must not be edited, or undefined when the edit is kept. Pure. */
export function protectedReason(path: string, isNew: boolean, rules: ProtectRules): string | undefined {
  if (rules.allowEdits.some((a) => matchesPattern(path, a))) return undefined;
  const hit = [...DEFAULT_PROTECTED, ...rules.protected].find((pat) => matchesPattern(path, pat));
  if (hit) return `harness or build file (matches '${hit}')`;
  const dir = rules.testDirs.find((d) => inDir(path, d) && d !== "" && d !== ".");
  if (dir === undefined) return undefined;
  if (!isNew) return `existing file in the test directory '${dir}'`;
  const base = path.slice(path.lastIndexOf("/") + 1);
  if (TEST_DIR_HOOKS.has(base)) return `collection hook in the test directory '${dir}'`;
  return undefined;
}

/** Whether a directory's name says it holds tests (`test`, `tests`, `__tests__`, `spec`, `testdata`, …). Pure. */
export const isTestDirName = (name: string): boolean =>
  /^(tests?|__tests__|specs?|testdata|testing)$/.test(name);

/** Base names of test-only files a runner discovers on its own, in every language. */
const NEW_TEST_FILE = [/^test_.*\.(py|c|cc|cpp)$/, /_test\.(py|go)$/, /\.(test|spec)\.[cm]?[jt]sx?$/];

/** Whether a NEW file at `path` is a test file the agent wrote (left out of scoring). Pure. */
export function isNewTestFile(path: string): boolean {
  const base = path.slice(path.lastIndexOf("/") + 1);
  if (NEW_TEST_FILE.some((re) => re.test(base))) return true;
  // Rust integration tests: every file directly under a crate's tests/ is its own test binary
  return /(^|\/)tests\/[^/]+\.rs$/.test(path);
}

/** Whether either side of a section is a symbolic link (added, removed, mode-changed, or retargeted). */
const isSymlink = (f: FileDiff) =>
  /^((new file mode|new mode|old mode|deleted file mode) 120000|index [0-9a-f]+\.\.[0-9a-f]+ 120000)$/m.test(
    f.text.slice(0, Math.max(0, f.text.indexOf("\n@@")) || f.text.length),
  );

/**
 * Drops every section of `diff` that edits a protected path (either side of a rename counts) or
 * adds or retargets a symbolic link (which could point a later write at a hidden or harness file).
 * Pure.
 */
export function protectDiff(diff: string, rules: ProtectRules): ProtectedDiff {
  const kept: FileDiff[] = [];
  const why: Record<string, string> = {};
  const ignored: string[] = [];
  for (const f of splitDiff(diff)) {
    const isNew = f.oldPath === undefined;
    if (
      isNew &&
      !rules.keepNewTests &&
      f.newPath !== undefined &&
      !isSymlink(f) &&
      isNewTestFile(f.newPath)
    ) {
      ignored.push(f.newPath);
      continue;
    }
    const reasons = [f.oldPath, f.newPath]
      .filter((p): p is string => p !== undefined)
      .map((p) => [p, isSymlink(f) ? "symbolic link" : protectedReason(p, isNew, rules)] as const)
      .filter((r): r is readonly [string, string] => r[1] !== undefined);
    if (reasons.length === 0) kept.push(f);
    for (const [p, r] of reasons) why[p] = r;
  }
  return {
    diff: kept.map((f) => f.text).join(""),
    tampered: Object.keys(why).sort(),
    why,
    ignored: ignored.sort(),
  };
}
