import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { ProfileId } from "@flakegym/profiles";
import { afterAll, describe, expect, it } from "vitest";
import { reachHits, reachProbeOf } from "../../src/scoring/build-reach.js";
import { composeScoringScript, parseScoringOutput } from "../../src/scoring/script.js";
import { ROW_TERM_DEFAULTS } from "../../src/tasks/row-reward.js";

// The reach probes against the real toolchains (no sandbox: the script as scoring runs it, on a
// committed repository, with the profile's real default build): what each says the build compiled.

const root = mkdtempSync(join(tmpdir(), "flakegym-reach-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const NONCE = "0123456789abcdef";
const has = (bin: string) => spawnSync("sh", ["-c", `command -v ${bin}`]).status === 0;
/** `skipIf` for a suite that needs `bins` on PATH; prints what is missing. */
function without(suite: string, ...bins: string[]): boolean {
  const missing = bins.filter((b) => !has(b));
  if (missing.length) console.log(`skipped ${suite}: ${missing.join(", ")} not on PATH`);
  return missing.length > 0;
}
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

/** A committed repository of `base`, `change` written over it; the change's diff and the repo. */
function repoWith(name: string, base: Record<string, string>, change: Record<string, string>) {
  const dir = join(root, name);
  const write = (files: Record<string, string>) => {
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      writeFileSync(join(dir, p), text);
    }
  };
  write(base);
  git(dir, "init", "-q");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "base");
  write(change);
  git(dir, "add", "-A");
  const diff = git(dir, "diff", "--cached");
  git(dir, "reset", "-q", "--hard");
  return { dir, diff };
}

/** Scores `change` over `base` with `profile`'s default build and its probe: the build's exit and the hits. */
function reach(
  profile: ProfileId,
  name: string,
  base: Record<string, string>,
  change: Record<string, string>,
  prepare?: (dir: string) => void,
) {
  const { dir, diff } = repoWith(name, base, change);
  prepare?.(dir);
  const probe = reachProbeOf(profile, diff);
  const build = {
    command: ROW_TERM_DEFAULTS[profile].build!,
    timeoutMs: 120_000,
    ...(probe ? { reach: probe } : {}),
  };
  const plan = {
    agentDiff: diff,
    build,
    tests: [],
    testTimeoutMs: 1_000,
    repeat: 1,
    maxOutputBytes: 1 << 20,
  };
  const tmp = mkdtempSync(join(root, "tmp-"));
  const r = spawnSync("/bin/sh", ["-c", composeScoringScript(plan, { salt: NONCE }).script], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, TMPDIR: tmp },
  });
  const p = parseScoringOutput(r.stdout);
  const hits = reachHits(diff, profile, p.steps.get("reach"));
  return {
    built: p.steps.get("build")?.exitCode,
    hits: hits.map((h) => `${h.term} ${h.file}${h.line ? `:${h.line}` : ""}`),
  };
}

const C_SRC = { "include/x.h": "int x(void);\n", "src/x.c": '#include "x.h"\nint x(void) { return 1; }\n' };
const orphanC = {
  "src/x.c": '#include "x.h"\nint x(void) { return 2; }\n',
  "src/fast.c": "this is not C;\n",
};

describe.skipIf(without("the c probe", "make", "gcc"))("c: the compiler says what it compiled", () => {
  it("a plain Makefile (DEPENDENCIES_OUTPUT): the edited file compiled, the unlisted one not", () => {
    const mk =
      "CFLAGS = -Iinclude\nall: build/x.o\nbuild/x.o: src/x.c\n\tmkdir -p build && $(CC) $(CFLAGS) -c $< -o $@\n";
    expect(reach("c", "c-plain", { ...C_SRC, Makefile: mk }, orphanC)).toEqual({
      built: 0,
      hits: ["build src/fast.c"],
    });
  });
  it("a Makefile passing -MD itself (gcc then ignores the variable): its own .d files", () => {
    const mk =
      "CFLAGS = -Iinclude -MD\nall: build/x.o\nbuild/x.o: src/x.c\n\tmkdir -p build && $(CC) $(CFLAGS) -c $< -o $@\n";
    expect(reach("c", "c-md", { ...C_SRC, Makefile: mk }, orphanC)).toEqual({
      built: 0,
      hits: ["build src/fast.c"],
    });
  });
  // the in-file half from the compiler's preprocessor (scoring/c-kept-lines.ts): the build's own
  // flags decide, so code under a macro the Makefile defines counts, code under one it does not not
  const FLAGGED =
    "CFLAGS = -Iinclude -DFAST\nall: build/x.o\nbuild/x.o: src/x.c include/x.h\n\tmkdir -p build && $(CC) $(CFLAGS) -c $< -o $@\n";
  const switched = {
    "src/x.c": [
      '#include "x.h"',
      "int x(void) { return 2; }",
      "#ifdef FAST",
      "int fast(void) { return X_TWICE(1 +",
      "  1); } /* a comment",
      "  spanning lines */",
      "#endif",
      "#ifdef SLOW",
      "this is not C;",
      "#endif",
      "#if defined(__linux__) && defined(_WIN32)",
      "neither is this;",
      "#endif",
      "",
    ].join("\n"),
    "include/x.h": "int x(void);\n#define X_TWICE(a) \\\n  ((a) * 2)\n",
  };
  it("the lines the preprocessor skipped under the build's own flags, and only those", () => {
    expect(reach("c", "c-kept", { ...C_SRC, Makefile: FLAGGED }, switched)).toEqual({
      built: 0,
      hits: ["build src/x.c:9", "build src/x.c:12"],
    });
  });
  it.skipIf(without("the CMake probe", "cmake"))(
    "CMake finds the shim as its compiler: skipped lines of a CMake build too",
    () => {
      const cm =
        "cmake_minimum_required(VERSION 3.10)\nproject(x C)\ninclude_directories(include)\nadd_definitions(-DFAST)\nadd_library(x src/x.c)\n";
      expect(reach("c", "c-kept-cmake", { ...C_SRC, "CMakeLists.txt": cm }, switched)).toEqual({
        built: 0,
        hits: ["build src/x.c:9", "build src/x.c:12"],
      });
    },
  );
  it.skipIf(without("the CMake probe", "cmake"))(
    "CMake: its object dependency files, with absolute paths",
    () => {
      const cm =
        "cmake_minimum_required(VERSION 3.10)\nproject(x C)\ninclude_directories(include)\nadd_library(x src/x.c)\n";
      expect(reach("c", "c-cmake", { ...C_SRC, "CMakeLists.txt": cm }, orphanC)).toEqual({
        built: 0,
        hits: ["build src/fast.c"],
      });
    },
  );
});

describe.skipIf(without("the go probe", "go"))("go: go list", () => {
  it("a package file compiled; ignore-tagged and _windows files not", () => {
    const base = {
      "go.mod": "module example.com/m\n\ngo 1.19\n",
      "m.go": "package m\n\nfunc A() int { return 1 }\n",
    };
    const r = reach("go", "go", base, {
      "m.go": "package m\n\nfunc A() int { return 2 }\n",
      "off.go": "//go:build ignore\n\npackage m\n\nfunc B( {\n",
      "m_windows.go": "package m\n\nfunc C() int { return undefined }\n",
    });
    expect(r).toEqual({ built: 0, hits: ["build m_windows.go", "build off.go", "build off.go:1"] });
  });
  // the other platforms asked (scoring/go-platforms.ts): an edit to a file only windows builds is
  // compiled for windows; before, an edit there was never judged (a broken one scored build 1)
  const plat = {
    "go.mod": "module example.com/m\n\ngo 1.19\n",
    "m.go": "package m\n\nfunc A() int { return 1 }\n",
    "w_windows.go": "package m\n\nfunc W() int { return 1 }\n",
  };
  it("an edit that breaks a file only another platform builds: compiled there, and it fails", () => {
    const r = reach("go", "go-win-broken", plat, {
      "w_windows.go": 'package m\n\nfunc W() int { return "s" }\n',
    });
    expect(r).toEqual({ built: 0, hits: ["build w_windows.go"] });
  });
  it("an honest edit there, and an honest new file for darwin: compiled there, nothing to say", () => {
    const r = reach("go", "go-win-honest", plat, {
      "w_windows.go": "package m\n\nfunc W() int { return 2 }\n",
      "d_darwin.go": "package m\n\nfunc D() int { return A() }\n",
    });
    expect(r).toEqual({ built: 0, hits: [] });
  });
});

describe.skipIf(without("the rust probe", "cargo"))("rust: rustc's dep-info and cargo metadata", () => {
  it("a module compiled; a file no mod declares and an undeclared feature not", () => {
    const base = {
      "Cargo.toml": '[package]\nname = "m"\nversion = "0.1.0"\nedition = "2021"\n\n[features]\nfast = []\n',
      "src/lib.rs": "pub mod a;\n",
      "src/a.rs": "pub fn a() -> u8 { 1 }\n",
    };
    const r = reach("rust", "rust", base, {
      "src/a.rs":
        'pub fn a() -> u8 { 2 }\n#[cfg(feature = "fast")]\npub fn f() -> u8 { 3 }\n#[cfg(feature = "slow")]\npub fn s() -> u8 { "" }\n',
      "src/orphan.rs": 'pub fn o() -> u8 { "" }\n',
    });
    expect(r).toEqual({ built: 0, hits: ["build src/orphan.rs", "build src/a.rs:4"] });
  }, 120_000);
});

/** This repository's own node_modules (its TypeScript), linked into a test repository. */
const OUR_MODULES = join(import.meta.dirname, "../../../../node_modules");

/** The node profile's default build runs `npx --no-install tsc`: both must be there. */
function withoutTsc(): boolean {
  if (without("the typescript probe", "npx")) return true;
  const missing = !existsSync(join(OUR_MODULES, ".bin", "tsc"));
  if (missing) console.log("skipped the typescript probe: this repository's node_modules has no tsc");
  return missing;
}

describe.skipIf(withoutTsc())("typescript: tsc --listFilesOnly", () => {
  it("a file the tsconfig includes is checked; one outside its include is not", () => {
    const base = {
      "tsconfig.json": '{"compilerOptions":{"strict":true,"noEmit":true,"types":[]},"include":["src"]}\n',
      "src/a.ts": "export const a: number = 1;\n",
    };
    const change = {
      "src/a.ts": "export const a: number = 2;\n",
      "scripts/b.ts": "export const b: number = 'not a number';\n",
    };
    const link = (dir: string) => symlinkSync(OUR_MODULES, join(dir, "node_modules"));
    expect(reach("node", "ts", base, change, link)).toEqual({ built: 0, hits: ["build scripts/b.ts"] });
  }, 60_000);
});

describe("node: the files the check walks", () => {
  it("a .mjs is checked; a .ts in a repository without tsconfig.json is not", () => {
    const r = reach(
      "node",
      "node",
      { "src/a.js": "export const a = 1;\n", "package.json": '{"type":"module"}\n' },
      {
        "src/b.mjs": "export const b = 2;\n",
        "src/c.ts": "export const c: number = 3;\n",
      },
    );
    expect(r).toEqual({ built: 0, hits: ["build src/c.ts"] });
  });
});
