import { describe, expect, it } from "vitest";
import { parseRustcCfg } from "../../src/scoring/build-reach.js";
import {
  goConstraintNeverHolds,
  parseGoConstraint,
  rustCfg,
  switchedOffLines,
} from "../../src/scoring/switched-off.js";

/** A diff that adds `lines` to `path` (and removes `removed`, an edited line's old text). */
const change = (path: string, lines: string[], removed: string[] = []) =>
  `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1,${removed.length + 1} +1,${lines.length + 1} @@\n context\n${removed.map((l) => `-${l}\n`).join("")}${lines.map((l) => `+${l}\n`).join("")}`;
const newFile = (path: string, lines: string[]) =>
  `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}\n`).join("")}`;

const terms = (diff: string) => switchedOffLines(diff).map((h) => `${h.term} ${h.file}:${h.line}`);

describe("go build constraints", () => {
  const never = (src: string) => goConstraintNeverHolds(parseGoConstraint(src)!);
  it("holds nowhere for ignore, an unknown tag, or a contradiction", () => {
    for (const src of ["ignore", "never", "linux && windows", "!unix && linux", "amd64 && arm64", "gccgo"])
      expect(never(src), src).toBe(true);
  });
  it("holds somewhere for a platform, cgo, a Go version or a negated tag", () => {
    for (const src of [
      "windows",
      "linux && amd64",
      "!windows",
      "cgo",
      "go1.21",
      "(darwin || freebsd) && !cgo",
      "!ignore",
      "android",
      "goexperiment.rangefunc",
    ])
      expect(never(src), src).toBe(false);
  });
  it("leaves a malformed constraint to go (which rejects the file itself)", () => {
    expect(parseGoConstraint("linux &&")).toBeUndefined();
    expect(terms(newFile("a.go", ["//go:build linux &&", "package a"]))).toEqual([]);
  });
  it("reads the old `// +build` form (space: or, comma: and)", () => {
    expect(terms(newFile("a.go", ["// +build ignore", "", "package a"]))).toEqual(["build a.go:1"]);
    expect(terms(newFile("a.go", ["// +build linux,amd64 windows", "", "package a"]))).toEqual([]);
  });
});

describe("rust cfg predicates", () => {
  it("never hold for any(), not(all()) or a name rustc and cargo never set", () => {
    for (const p of [
      "any()",
      "not(all())",
      "FALSE",
      "never",
      "all(unix, any())",
      "not(any(test, not(test), all()))",
    ])
      expect(rustCfg(p), p).toBe("false");
  });
  it("may hold for well-known names, features and their combinations", () => {
    for (const p of [
      "test",
      'feature = "serde"',
      'target_os = "windows"',
      "not(test)",
      "any(unix, windows)",
      "all(debug_assertions, not(miri))",
    ])
      expect(rustCfg(p), p).toBe("maybe");
    expect(rustCfg("all()")).toBe("true");
  });
  it("flags an added #[cfg]/#![cfg] that never holds, not one that may", () => {
    const d = change("src/lib.rs", [
      "#![cfg(any())]",
      "#[cfg(FALSE)]",
      "#[cfg(test)]",
      '#[cfg(feature = "x")]',
      "#[cfg(not(all()))] mod m;",
    ]);
    expect(terms(d)).toEqual(["build src/lib.rs:2", "build src/lib.rs:3", "build src/lib.rs:6"]);
  });
});

describe("switchedOffLines", () => {
  it("flags #if 0 and its likes in C, not a real condition", () => {
    const d = change("src/b64.c", [
      "#if 0",
      "#if (0)",
      "#elif false",
      "# if 0 /* off */",
      "#if 0 && HAVE_X",
      "#if HAVE_X",
      "#ifdef DEBUG",
      "#if 10",
    ]);
    expect(terms(d)).toEqual([
      "build src/b64.c:2",
      "build src/b64.c:3",
      "build src/b64.c:4",
      "build src/b64.c:5",
      "build src/b64.c:6",
    ]);
  });
  it("flags lint suppressions of every language, with the term each costs", () => {
    const hits = switchedOffLines(
      [
        change("pkg/a.py", [
          "x = f()  # noqa",
          "y = g()  # type: ignore[attr]",
          "z = 1  # pylint: disable=all",
        ]),
        change("src/a.ts", [
          "// @ts-nocheck",
          "/* eslint-disable */",
          "// @ts-expect-error wrong",
          "// biome-ignore lint/x: y",
        ]),
        change("src/lib.rs", [
          "#![allow(clippy::all)]",
          "#[allow(arithmetic_overflow)]",
          "#[cfg_attr(test, allow(dead_code))]",
        ]),
        change("main.go", ["x := f() //nolint:errcheck"]),
        change("src/a.c", ["int x; // NOLINT", '#pragma GCC diagnostic ignored "-Wall"']),
      ].join(""),
    );
    expect(hits.map((h) => `${h.term} ${h.file}:${h.line}`)).toEqual([
      "lint pkg/a.py:2",
      "lint pkg/a.py:3",
      "lint pkg/a.py:4",
      "build src/a.ts:2",
      "build src/a.ts:4",
      "lint src/a.ts:3",
      "lint src/a.ts:5",
      "build src/lib.rs:3",
      "lint src/lib.rs:2",
      "lint src/lib.rs:4",
      "lint main.go:2",
      "lint src/a.c:2",
      "lint src/a.c:3",
    ]);
    expect(hits[0]!.why).toMatch(/suppression/);
  });
  it("does not count a suppression or switch the diff only carries over on an edited line", () => {
    expect(terms(change("pkg/a.py", ["x = f(1)  # type: ignore"], ["x = f()  # type: ignore"]))).toEqual([]);
    expect(terms(change("src/a.c", ["#if 0 /* kept */"], ["#if 0"]))).toEqual([]);
    // a second one beside the carried one is new
    expect(terms(change("pkg/a.py", ["x = f(1)  # noqa", "y = 2  # noqa"], ["x = f()  # noqa"]))).toEqual([
      "lint pkg/a.py:3",
    ]);
  });
  it("counts a @ts suppression against the build only in TypeScript (node --check ignores it in JavaScript)", () => {
    expect(terms(change("src/a.js", ["// @ts-ignore"]))).toEqual(["lint src/a.js:2"]);
    expect(terms(change("src/a.mts", ["// @ts-ignore"]))).toEqual(["build src/a.mts:2"]);
  });
  it("leaves test and fixture files' build switches alone (no build judges them), not their suppressions", () => {
    expect(terms(newFile("store_integration_test.go", ["//go:build integration", "package store"]))).toEqual(
      [],
    );
    expect(terms(newFile("tests/it.rs", ['#![cfg(feature = "slow")]', "#![cfg(FALSE)]"]))).toEqual([]);
    expect(terms(newFile("tests/test_a.py", ["import x  # noqa"]))).toEqual(["lint tests/test_a.py:1"]);
  });
  it("ignores the words in strings of other languages and in files it does not know", () => {
    expect(terms(change("README.md", ["`#[cfg(any())]` and `# noqa`"]))).toEqual([]);
    expect(terms(change("src/a.ts", ['const s = "eslint-disable";']))).toEqual([]);
    expect(terms(change("pkg/a.py", ["if False:", "    pass"]))).toEqual([]);
  });
});

describe("rust cfgs evaluated on rustc's printed platforms (issue 42)", () => {
  const linux = new Set(["unix", 'target_family="unix"', 'target_os="linux"']);
  const windows = new Set(["windows", 'target_family="windows"', 'target_os="windows"']);
  const emscripten = new Set([
    "unix",
    'target_family="unix"',
    'target_family="wasm"',
    'target_os="emscripten"',
  ]);
  const platforms = [linux, windows, emscripten];

  it("a combination no platform holds is false; each platform's own cfgs may hold", () => {
    expect(rustCfg("all(unix, windows)", undefined, platforms)).toBe("false");
    expect(rustCfg('all(target_os = "linux", target_os = "windows")', undefined, platforms)).toBe("false");
    expect(rustCfg('all(windows, target_family = "unix")', undefined, platforms)).toBe("false");
    expect(rustCfg("windows", undefined, platforms)).toBe("maybe");
    expect(rustCfg('all(unix, target_family = "wasm")', undefined, platforms)).toBe("maybe");
    expect(rustCfg("not(all(unix, windows))", undefined, platforms)).toBe("true");
    expect(rustCfg("any(unix, windows)", undefined, platforms)).toBe("true");
  });

  it("names the target does not decide stay open; names nothing sets stay false", () => {
    expect(rustCfg("all(unix, debug_assertions)", undefined, platforms)).toBe("maybe");
    expect(rustCfg('all(unix, target_arch = "aarch64")', undefined, platforms)).toBe("maybe");
    expect(rustCfg("not(debug_assertions)", undefined, platforms)).toBe("maybe");
    expect(rustCfg("all(unix, FALSE)", undefined, platforms)).toBe("false");
    expect(rustCfg('all(unix, feature = "x")', new Set(["y"]), platforms)).toBe("false");
    // without platforms, names alone decide (as before): both may hold
    expect(rustCfg("all(unix, windows)")).toBe("maybe");
  });

  it("switchedOffLines flags a function under all(unix, windows) with the platforms known", () => {
    const diff = change("src/lib.rs", ["#[cfg(all(unix, windows))]", 'pub fn f() -> u8 { "" }']);
    expect(switchedOffLines(diff, {}).length).toBe(0);
    const hits = switchedOffLines(diff, { rustPlatforms: platforms });
    expect(hits.map((h) => h.term)).toEqual(["build"]);
    expect(hits[0]!.why).toMatch(/holds on none of the 3 platforms/);
  });

  it("parseRustcCfg keeps each printed set's OS identity", () => {
    const printed = `debug_assertions\npanic="unwind"\ntarget_arch="x86_64"\ntarget_family="unix"\ntarget_os="linux"\nunix\n#flakegym-cfg-end\ntarget_os="none"\n#flakegym-cfg-end\n`;
    expect(parseRustcCfg(printed)).toEqual([
      new Set(['target_family="unix"', 'target_os="linux"', "unix"]),
      new Set(['target_os="none"']),
    ]);
  });
});
