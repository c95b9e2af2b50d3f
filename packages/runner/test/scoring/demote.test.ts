import { describe, expect, it } from "vitest";
import { demotedCommand, NODE_TEST_FILE, PYTEST_LAUNCHER } from "../../src/scoring/demote.js";

const of = (command: string, more: { profile?: "c" | "rust"; graded?: string[]; files?: string[] } = {}) =>
  demotedCommand({
    command,
    ...(more.profile ? { profile: more.profile } : {}),
    testFiles: more.files ?? [],
    graded: more.graded ?? [],
  });

describe("demotedCommand", () => {
  it("pytest runs through the launcher", () => {
    for (const cmd of ["python3 -m pytest -rA", "pytest -rA", "python3.9 -m pytest -rA"]) {
      const d = of(cmd);
      expect(d).toContain(` -c '${PYTEST_LAUNCHER.replaceAll("'", `'\\''`)}' -rA`);
      expect(d.startsWith("find . -name __pycache__")).toBe(true);
    }
    expect(of("python3.9 -m pytest -rA")).toContain("python3.9 -c");
    expect(of("PYTHONHASHSEED=0 pytest tests/x.py")).toContain("PYTHONHASHSEED=0 python3 -c");
    // not pytest: as written
    expect(of("python3 tests/runtests.py")).toBe("python3 tests/runtests.py");
    expect(of("pytestish")).toBe("pytestish");
  });

  it("the launcher imports pytest before the workspace is on sys.path and appends it after", () => {
    const lines = PYTEST_LAUNCHER.split("\n");
    const importAt = lines.indexOf("import pytest");
    expect(lines.findIndex((l) => l.startsWith("sys.path[:] ="))).toBeLessThan(importAt);
    expect(lines.findIndex((l) => l.startsWith("sys.path.extend(_cut"))).toBeGreaterThan(importAt);
    expect(PYTEST_LAUNCHER).toContain("sys.meta_path.insert(0, _Installed)");
  });

  it("node --test gets the snapshot's tracked test files and the hidden ones, nothing it finds itself", () => {
    const d = of("node --test --test-reporter=tap", { files: ["test/x.test.mjs", "test/it's.mjs"] });
    expect(d).toContain("git -c core.fsmonitor= ls-files -z");
    expect(d).toContain(`printf '%s\\0' 'test/x.test.mjs' 'test/it'\\''s.mjs'`);
    expect(d).toContain(`exec node --test --test-reporter=tap "$@"`);
    // a command naming its files already runs only those
    expect(of("node --test test/a.test.mjs")).toBe("node --test test/a.test.mjs");
  });

  it("node's default test file patterns", () => {
    const re = new RegExp(NODE_TEST_FILE);
    for (const yes of [
      "test/a.mjs",
      "test/sub/b.cjs",
      "a.test.js",
      "src/a-test.js",
      "a_test.mjs",
      "test-a.js",
      "test.js",
    ])
      expect(re.test(yes), yes).toBe(true);
    for (const no of ["src/index.js", "testing.js", "test/readme.md", "atest.js"])
      expect(re.test(no), no).toBe(false);
  });

  it("cargo test skips doctests unless the command selects targets or a doctest is graded", () => {
    expect(of("cargo test --offline --no-fail-fast")).toBe("cargo test --tests --offline --no-fail-fast");
    expect(of("cargo test --offline -p w --test gauge")).toBe("cargo test --offline -p w --test gauge");
    expect(of("cargo test --doc")).toBe("cargo test --doc");
    expect(of("cargo test -- --exact a")).toBe("cargo test --tests -- --exact a");
    expect(of("cargo test", { graded: ["src/lib.rs - mean (line 4)"] })).toBe("cargo test");
  });

  it("go test ignores any go.work", () => {
    expect(of("go test -v -count=1 ./...")).toBe("GOWORK=off go test -v -count=1 ./...");
  });

  it("a C profile's command runs with the compilers wrapped: -I dirs searched after the system's", () => {
    const d = of("make -s check", { profile: "c" });
    expect(d).toContain(`PATH="$d:$PATH" sh -c 'make -s check'`);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    expect(d).toContain('-I*) set -- "$@" -idirafter "${a#-I}"');
    for (const cc of ["cc", "gcc", "clang"]) expect(d).toContain(`r=$(command -v ${cc})`);
  });
});
