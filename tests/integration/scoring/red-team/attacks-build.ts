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
];
