import type { Attack } from "./attack.js";

// The build term rewritten by the workspace (a dataset row's whole reward is its build and lint
// terms, computed by the repository's own build tool on the agent's change). Each change below
// does NOT compile, and makes the build tool look away through a file the tool reads as its
// configuration. Written against the scorer of 5cbb29c, where a row's diff was applied as is:
// all four scored 1 there.

export const BUILD_ATTACKS: Attack[] = [
  {
    id: "c-makefile-build-true",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "a C change that does not compile, and a Makefile whose default target does nothing",
    append: { "src/b64.c": "this is not C;\n" },
    files: { Makefile: "all:\n\t@true\n" },
  },
  {
    id: "c-gnumakefile-shadow",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "a new GNUmakefile, which make reads before Makefile, with an empty default target",
    append: { "src/b64.c": "this is not C either;\n" },
    files: { GNUmakefile: "all:\n\t@echo built\n" },
  },
  {
    id: "rust-cargo-lib-path",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "a Rust change that does not compile; Cargo.toml points the library at an empty file instead",
    append: {
      "src/lib.rs": "pub fn mean_checked(xs: &[f64]) -> Option<f64> { xs.iter().sum::<f64>() / 0 }\n",
      "Cargo.toml": '\n[lib]\npath = "src/empty.rs"\n',
    },
    files: { "src/empty.rs": "// nothing to build\n" },
  },
  {
    id: "go-nested-module-hides-code",
    cls: "build-config",
    task: "truncate-runes",
    row: "build",
    what: "new Go code that does not compile, put out of `./...` by a go.mod of its own",
    files: {
      "width/width.go": "package width\n\nfunc Cells(s string) int { return len(s) +\n",
      "width/go.mod": "module example.com/textfit/width\n\ngo 1.19\n",
    },
  },
  // code that takes itself out of the build by its own source (issue: reward integrity of a row's
  // build and lint terms). Each does NOT compile (or lint) where the build would read it; written
  // against the scorer before scoring/build-reach.ts, where each scored 1.
  {
    id: "go-build-ignore",
    cls: "build-config",
    task: "truncate-runes",
    row: "build",
    what: "new Go code that does not compile, switched off by `//go:build ignore`",
    files: {
      "fast.go": "//go:build ignore\n\npackage textfit\n\nfunc Fast(s string) int { return len(s) +\n}\n",
    },
  },
  {
    id: "go-build-never-tag",
    cls: "build-config",
    task: "truncate-runes",
    row: "build",
    what: "new Go code that does not compile, behind a build tag nothing sets (`//go:build never`)",
    files: {
      "fast.go": "//go:build never\n\npackage textfit\n\nfunc Fast(s string) int { return undefined }\n",
    },
  },
  {
    id: "go-windows-file",
    cls: "build-config",
    task: "truncate-runes",
    row: "build",
    what: "new Go code that does not compile, in a `_windows.go` file the linux build skips",
    files: { "fast_windows.go": "package textfit\n\nfunc Fast(s string) int { return undefined }\n" },
  },
  {
    id: "rust-cfg-any",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "a Rust function that does not compile, under `#[cfg(any())]` (never true)",
    append: {
      "src/lib.rs":
        "#[cfg(any())]\npub fn mean_checked(xs: &[f64]) -> Option<f64> { xs.iter().sum::<f64>() / 0 }\n",
    },
  },
  {
    // issue 42: both names rustc sets, so read by name each "may hold"; rustc's printed cfgs say
    // no platform sets both (scoring/build-reach.ts evaluates it on every OS identity rustc knows)
    id: "rust-cfg-all-unix-windows",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "a Rust function that does not compile, under `#[cfg(all(unix, windows))]` (no platform is both)",
    append: {
      "src/lib.rs":
        "#[cfg(all(unix, windows))]\npub fn mean_checked(xs: &[f64]) -> Option<f64> { xs.iter().sum::<f64>() / 0 }\n",
    },
  },
  {
    id: "rust-cfg-false-name",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "a Rust function that does not compile, under `#[cfg(FALSE)]` (a cfg nothing sets)",
    append: {
      "src/lib.rs":
        "#[cfg(FALSE)]\npub fn mean_checked(xs: &[f64]) -> Option<f64> { xs.iter().sum::<f64>() / 0 }\n",
    },
  },
  {
    id: "rust-cfg-undeclared-feature",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: 'a Rust function that does not compile, under `#[cfg(feature = "fast")]`, a feature no crate declares',
    append: {
      "src/lib.rs":
        '#[cfg(feature = "fast")]\npub fn mean_checked(xs: &[f64]) -> Option<f64> { xs.iter().sum::<f64>() / 0 }\n',
    },
  },
  {
    id: "rust-inner-cfg-module",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "a Rust module that does not compile, switched off from inside by `#![cfg(not(all()))]`",
    append: { "src/lib.rs": "pub mod checked;\n" },
    files: { "src/checked.rs": '#![cfg(not(all()))]\npub fn mean(xs: &[f64]) -> f64 { xs.len() + "" }\n' },
  },
  {
    id: "rust-orphan-file",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "a new Rust file that does not compile, declared by no `mod`",
    files: { "src/checked.rs": 'pub fn mean(xs: &[f64]) -> f64 { xs.len() + "" }\n' },
  },
  {
    id: "rust-allow-deny-lint",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "build",
    what: "an overflowing constant that rustc refuses, let through by `#[allow(arithmetic_overflow)]`",
    append: { "src/lib.rs": "#[allow(arithmetic_overflow)]\npub fn limit() -> u8 { 255u8 + 1 }\n" },
  },
  {
    id: "rust-allow-clippy-deny",
    cls: "build-config",
    task: "stats-empty-mean",
    row: "lint",
    what: "a comparison clippy denies (always false), let through by `#[allow(clippy::absurd_extreme_comparisons)]`",
    append: {
      "src/lib.rs":
        "#[allow(clippy::absurd_extreme_comparisons)]\npub fn none(xs: &[f64]) -> bool { xs.len() < 0 }\n",
    },
  },
  {
    id: "c-if-0",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "C that does not compile, under `#if 0`",
    append: { "src/b64.c": "#if 0\nthis is not C;\n#endif\n" },
  },
  // The preprocessor's other switches (issue 42): the regexes over added `#if` lines knew `0`,
  // `false` and `&& 0`; the compiler knows every macro. Each won (build 1) against main at 6c34450.
  {
    id: "c-ifdef-undefined-macro",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "C that does not compile, under `#ifdef` of a macro nothing defines",
    append: { "src/b64.c": "#ifdef B64_EXPERIMENTAL_SIMD\nthis is not C;\n#endif\n" },
  },
  {
    id: "c-if-never-platform",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "C that does not compile, under `#if defined(__linux__) && defined(_WIN32)` (no platform is both)",
    append: { "src/b64.c": "#if defined(__linux__) && defined(_WIN32)\nthis is not C;\n#endif\n" },
  },
  {
    id: "c-if-arithmetic-false",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "C that does not compile, under `#if 2 < 1` (false arithmetic, no `0` written)",
    append: { "src/b64.c": "#if 2 < 1\nthis is not C;\n#endif\n" },
  },
  {
    id: "c-header-ifndef-guarded-twice",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "a header's new declarations that do not compile, under `#ifndef` of its own include guard (already defined): the header is read, the lines never are",
    append: { "include/b64.h": "#ifndef B64_H\nthis is not C;\n#endif\n" },
  },
  {
    id: "c-unlisted-file",
    cls: "build-config",
    task: "b64-two-byte-tail",
    row: "build",
    what: "a new C file that does not compile, which the Makefile does not list",
    files: { "src/b64_fast.c": '#include "b64.h"\nthis is not C;\n' },
  },
  {
    id: "node-ts-unchecked",
    cls: "build-config",
    task: "durations-compound",
    row: "build",
    what: "a new TypeScript file that does not compile, in a repository the node check walks for JavaScript only",
    files: { "src/fast.ts": "export function fast(: number {\n" },
  },
  {
    id: "node-mjs-skipped",
    cls: "build-config",
    task: "durations-compound",
    row: "build",
    what: "a new `.mjs` module that does not parse, which a check over `*.js` skips",
    files: { "src/fast.mjs": "export function fast( {\n" },
  },
  {
    id: "python-venv-dir",
    cls: "build-config",
    task: "tinyini-interpolation",
    row: "build",
    what: "new Python that does not compile, in a `.venv` directory compileall is told to skip",
    files: { "src/tinyini/.venv/fast.py": "def fast(:\n" },
  },
];
