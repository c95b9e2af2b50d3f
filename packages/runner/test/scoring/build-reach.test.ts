import { describe, expect, it } from "vitest";
import {
  applyReach,
  CFG_TARGETS,
  isBuiltSource,
  parseReach,
  reachHits,
  reachProbeOf,
  unreadFiles,
} from "../../src/scoring/build-reach.js";
import type { Term } from "../../src/scoring/reward.js";
import type { StepResult } from "../../src/scoring/script.js";

const newFile = (path: string, lines: string[]) =>
  `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}\n`).join("")}`;
const edit = (path: string, line: string) =>
  `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1,1 +1,2 @@\n context\n+${line}\n`;
const probe = (output: string, exitCode = 0): StepResult => ({
  exitCode,
  output,
  outputBytes: output.length,
  seconds: 0,
});

describe("parseReach", () => {
  it("reads a root line and paths, make-style dependency lines included", () => {
    const out =
      "/ws\n/ws/target/debug/deps/s-1.rmeta: /ws/src/lib.rs src/a.rs \\\n  ./src/b/../c.rs\n\nsrc/lib.rs:\n";
    // the target (`…rmeta:`) is not a source the build read
    expect([...parseReach(out).files].sort()).toEqual(["src/a.rs", "src/c.rs", "src/lib.rs"]);
  });
  it("reads the features the crates declare from the cargo metadata after its marker", () => {
    const meta = JSON.stringify({
      packages: [{ features: { default: [], serde: [] } }, { features: { fast: [] } }],
    });
    const r = parseReach(`/ws\nx.d: src/lib.rs\n\n#flakegym-cargo-metadata\n${meta}\n`);
    expect([...r.files]).toEqual(["src/lib.rs"]);
    expect([...(r.rustFeatures ?? [])].sort()).toEqual(["default", "fast", "serde"]);
    // no metadata (cargo failed): features unknown, never an empty set that would zero every feature
    expect(parseReach("/ws\nx.d: src/lib.rs\n\n#flakegym-cargo-metadata\n").rustFeatures).toBeUndefined();
  });
  it("lets the declared features decide `cfg(feature = …)` in the diff", () => {
    const meta = JSON.stringify({ packages: [{ features: { serde: [] } }] });
    const diff = newFile("src/lib.rs", [
      '#[cfg(feature = "serde")]',
      "mod a;",
      '#[cfg(feature = "nope")]',
      "mod b;",
    ]);
    const hits = reachHits(
      diff,
      "rust",
      probe(`/ws\nx.d: /ws/src/lib.rs\n\n#flakegym-cargo-metadata\n${meta}\n`),
    );
    expect(hits.map((h) => `${h.file}:${h.line}`)).toEqual(["src/lib.rs:3"]);
    // without the metadata a feature may hold
    expect(reachHits(diff, "rust", probe("/ws\nx.d: /ws/src/lib.rs\n"))).toEqual([]);
  });
});

describe("isBuiltSource", () => {
  it("judges each profile's source files, not tests, fixtures, docs or data", () => {
    expect(isBuiltSource("rust", "src/extra.rs")).toBe(true);
    expect(isBuiltSource("rust", "tests/it.rs")).toBe(false);
    expect(isBuiltSource("go", "pkg/x_test.go")).toBe(false);
    expect(isBuiltSource("go", "pkg/testdata/broken.go")).toBe(false);
    expect(isBuiltSource("node", "src/a.mjs")).toBe(true);
    expect(isBuiltSource("node", "src/a.test.ts")).toBe(false);
    expect(isBuiltSource("c", "include/x.h")).toBe(true);
    expect(isBuiltSource("python", "docs/conf.py")).toBe(false);
    expect(isBuiltSource("python", "README.md")).toBe(false);
    expect(isBuiltSource("dev-base", "a.sh")).toBe(false);
  });
});

describe("unreadFiles", () => {
  it("names every changed source file the build's own list lacks", () => {
    const diff = newFile("src/orphan.rs", ["fn broken( {"]) + edit("src/lib.rs", "pub fn f() {}");
    const hits = unreadFiles("rust", diff, probe("/ws\ntarget/debug/deps/x.d: /ws/src/lib.rs\n"));
    expect(hits.map((h) => `${h.term} ${h.file}`)).toEqual(["build src/orphan.rs"]);
    expect(hits[0]!.why).toMatch(/^not compiled by the build/);
  });
  it("matches a sub-make's relative entries by their tail", () => {
    const diff = edit("src/b64.c", "int x;");
    expect(unreadFiles("c", diff, probe("/ws\nb64.o: b64.c b64.h\n"))).toEqual([]);
    expect(unreadFiles("c", diff, probe("/ws\nmain.o: main.c\n"))).toHaveLength(1);
  });
  it("cannot vouch when the probe did not report or failed", () => {
    const diff = edit("main.go", "var x = 1");
    expect(unreadFiles("go", diff, undefined)[0]!.why).toMatch(/missing/);
    expect(unreadFiles("go", diff, probe("/ws\n/ws/main.go\n", 1))).toHaveLength(1);
    expect(unreadFiles("go", diff, probe("/ws\n/ws/main.go\n"))).toEqual([]);
  });
  it("lets an edit to a file only another platform builds pass, not a new one", () => {
    const list = probe("/ws\n/ws/main.go\n");
    expect(unreadFiles("go", edit("sys_windows.go", "var y = 2"), list)).toEqual([]);
    expect(unreadFiles("go", newFile("sys_windows.go", ["package main"]), list)).toHaveLength(1);
  });
  it("python: compileall's own exclusion, no probe", () => {
    expect(unreadFiles("python", newFile(".venv/lib/x.py", ["def f(:"]), undefined)).toHaveLength(1);
    expect(unreadFiles("python", newFile("pkg/x.py", ["def f(): pass"]), undefined)).toEqual([]);
  });
  it("refuses a changed path with a control character (it could forge a line of the list)", () => {
    const diff = newFile('"src/a\\nb.rs"', ["x"]).replace('+++ b/"src/a\\nb.rs"', '+++ "b/src/a\\nb.rs"');
    expect(unreadFiles("rust", diff, probe("/ws\n")).map((h) => h.why)).toEqual([
      "its name holds a control character",
    ]);
  });
});

describe("applyReach", () => {
  const pass = (name: "build" | "lint"): Term => ({ name, weight: 1, value: 1, detail: "`x` exited 0" });
  it("zeroes a passing build and lint for build hits, only the lint for lint hits, and names them", () => {
    const hits = reachHits(newFile("src/lib.rs", ["#![allow(clippy::all)]"]), undefined, undefined);
    const lintOnly = applyReach({ build: pass("build"), lint: pass("lint") }, hits);
    expect([lintOnly.build?.value, lintOnly.lint?.value]).toEqual([1, 0]);
    expect(lintOnly.lint?.detail).toMatch(/src\/lib\.rs:1 \(adds a lint suppression/);
    expect(lintOnly.counted).toHaveLength(1);
    const off = applyReach(
      { build: pass("build"), lint: pass("lint") },
      reachHits(newFile("src/lib.rs", ["#![cfg(any())]"]), undefined, undefined),
    );
    expect([off.build?.value, off.lint?.value]).toEqual([0, 0]);
  });
  it("leaves a failed or absent term and a clean change alone", () => {
    const failed: Term = { name: "build", weight: 1, value: 0, detail: "exited 1" };
    const hits = reachHits(newFile("a.go", ["//go:build ignore"]), undefined, undefined);
    const r = applyReach({ build: failed, lint: undefined }, hits);
    expect(r.build).toEqual(failed);
    expect(r.counted).toEqual([]);
    expect(applyReach({ build: pass("build"), lint: undefined }, []).build?.value).toBe(1);
  });
});

describe("reachProbeOf", () => {
  it("has a probe for each compiled profile, none for python and dev-base", () => {
    expect(reachProbeOf("go")?.list).toMatch(/go list -e/);
    expect(reachProbeOf("rust")?.list).toMatch(/-newer "\$FLAKEGYM_REACH\/mark"/);
    expect(reachProbeOf("c")?.buildEnv).toEqual({ DEPENDENCIES_OUTPUT: "deps" });
    expect(reachProbeOf("node")?.list).toMatch(/--listFilesOnly/);
    expect(reachProbeOf("python")).toBeUndefined();
    expect(reachProbeOf("dev-base")).toBeUndefined();
  });
});

describe("reachProbeOf: rustc's cfg sets", () => {
  it("are printed only when the diff adds a cfg predicate, for every sampled target", () => {
    expect(reachProbeOf("rust", "+pub fn f() {}\n")?.list).not.toContain("--print cfg");
    const list = reachProbeOf("rust", "+#[cfg(all(unix, windows))]\n")?.list ?? "";
    expect(list).toContain('"$r" --print cfg --target "$t"');
    for (const t of CFG_TARGETS) expect(list).toContain(` ${t}`);
    expect(reachProbeOf("go", "+#[cfg(x)]\n")?.list).not.toContain("--print cfg");
  });
});
