import { cp, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { demotedCommand } from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The class-wide test of scoring/demote.ts (issue 42), per profile, with the real toolchain: a
// catalog task's repository gets a shadow of EVERY module, header, test file or config the toolchain
// loads on its own — enumerated from the toolchain itself (the modules a pytest session imported,
// the headers `cc -M` lists for the test harness) — and each shadow leaves a mark when it is taken.
// The task's command as written takes them (the plant works); the demoted command takes none, and
// still runs the graded tests.

const CATALOG = fileURLToPath(new URL("../../../packages/runner/catalog/", import.meta.url));
const has = async (tool: string) =>
  (await execa("sh", ["-c", `command -v ${tool}`], { reject: false })).exitCode === 0;
const run = (cwd: string, command: string, env: Record<string, string> = {}) =>
  execa("sh", ["-c", command], { cwd, reject: false, all: true, env, timeout: 170_000 });
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-demote-");
});
afterAll(async () => {
  await tmp.cleanup();
});

/** A fresh copy of a catalog task's repository (its tests patch applied when `tests`), as a git work tree. */
async function repoOf(id: string, name: string, tests = false): Promise<string> {
  const dir = join(tmp.path, name);
  await cp(join(CATALOG, id, "repo"), dir, { recursive: true });
  const git = (...a: string[]) =>
    execa("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...a], { cwd: dir });
  await git("init", "-q");
  await git("add", "-A");
  await git("commit", "-qm", "snapshot");
  if (tests) await git("apply", join(CATALOG, id, "tests.patch"));
  return dir;
}

const pyOk: boolean = await has("python3").then(async (ok) =>
  ok ? (await execa("python3", ["-c", "import pytest"], { reject: false })).exitCode === 0 : false,
);
describe.skipIf(!pyOk)("python: no module pytest or the interpreter imports comes from the workspace", () => {
  it("a shadow of every module a pytest session imported, at the root and in tests/, is never taken", async () => {
    const ws = await repoOf("bytesize-unit-boundary", "py", true);
    // the toolchain's own list: every top-level module in sys.modules after a whole session
    const listed = await run(
      ws,
      `python3 -c 'import sys, pytest; pytest.main(["-q", "-p", "no:cacheprovider"]); print("MODULES"); print("\\n".join(sorted({m.split(".")[0] for m in list(sys.modules)})))'`,
    );
    const names = listed.stdout
      .split("MODULES\n")[1]!
      .split("\n")
      .filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
      .filter((n) => !["__main__", "bytesize", "tests", "conftest"].includes(n) && !n.startsWith("test_"));
    expect(names).toEqual(expect.arrayContaining(["pytest", "_pytest", "iniconfig", "pluggy", "os"]));
    const log = join(tmp.path, "py-shadows.log");
    // a transparent shadow: it leaves its mark, then puts the real module in its place (the session
    // goes on, so every shadow the command would take is marked, not only the first)
    const skip = JSON.stringify(["", ws, join(ws, "tests")]);
    const shadow = (n: string) =>
      [
        `open(${JSON.stringify(log)}, "a").write(${JSON.stringify(n)} + " " + __file__ + "\\n")`,
        "import sys as _s",
        "import importlib.util as _u",
        "from importlib.machinery import PathFinder as _F",
        "_key = __name__",
        "_me = _s.modules.pop(_key)",
        // the real module, found past the workspace but run with the path as it is (its own
        // imports still see the other shadows)
        `_spec = _F.find_spec(${JSON.stringify(n)}, [p for p in _s.path if p not in ${skip}])`,
        "_real = _u.module_from_spec(_spec)",
        `_s.modules[${JSON.stringify(n)}] = _real`,
        "_spec.loader.exec_module(_real)",
        // `python -m pytest` runs the pytest shadow as __main__: it runs the real one's main
        "if _key == '__main__':",
        "    _s.modules['__main__'] = _me",
        "    raise SystemExit(_real.console_main())",
        "",
      ].join("\n");
    for (const n of [...names, "sitecustomize", "usercustomize"])
      for (const d of ["", "tests"]) await writeFile(join(ws, d, `${n}.py`), shadow(n));
    const command = "python3 -m pytest -rA";
    await run(ws, command);
    const before = await readFile(log, "utf8").catch(() => "");
    expect(before, "the plant works: the command as written takes shadows").toMatch(/^iniconfig /m);
    await writeFile(log, "");
    const after = await run(ws, demotedCommand({ command, profile: "python", testFiles: [], graded: [] }));
    expect(await readFile(log, "utf8"), after.all).toBe("");
    console.log(
      `python: ${names.length} modules shadowed; as written ${new Set(before.split("\n").map((l) => l.split(" ")[0])).size - 1} taken, demoted 0`,
    );
    // the graded tests still ran (the bug is unfixed: the boundary tests fail, the rest pass)
    expect(after.all).toMatch(/PASSED tests\/test_format.py::test_small_sizes_are_plain_bytes/);
    expect(after.all).toMatch(/FAILED tests\/test_boundaries.py::test_exactly_one_kib/);
  });
});

/** The compiler's `<...>` search list (`cc -E -v`). */
async function systemIncludeDirs(): Promise<string[]> {
  const r = await execa("sh", ["-c", "cc -xc -E -v /dev/null 2>&1 >/dev/null"], { reject: false });
  const text = r.stdout;
  const body = text.split("#include <...> search starts here:\n")[1]?.split("End of search list.")[0] ?? "";
  return body
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

const ccOk = (await has("cc")) && (await has("make"));
describe.skipIf(!ccOk)("c: no header the compiler finds on its own comes from the workspace", () => {
  it("a shadow of every system header the harness includes, in the project's -I dir, is never taken", async () => {
    const ws = await repoOf("b64-two-byte-tail", "c", true);
    // the toolchain's own list: every header `cc -M` reads for the harness, with the Makefile's flags
    const deps = await run(ws, "cc -M -Iinclude tests/test_tail.c");
    expect(deps.exitCode, deps.all).toBe(0);
    const dirs = (await systemIncludeDirs()).sort((a, b) => b.length - a.length);
    const headers = deps.stdout
      .replace(/\\\n/g, " ")
      .split(/\s+/)
      .filter((p) => p.startsWith("/"))
      .map((p) => {
        const d = dirs.find((s) => p.startsWith(`${s}/`));
        return d ? relative(d, p) : undefined;
      })
      .filter((p): p is string => p !== undefined);
    expect(headers).toContain("stdio.h");
    for (const h of headers) {
      await mkdir(dirname(join(ws, "include", h)), { recursive: true });
      await writeFile(join(ws, "include", h), `#error FLAKEGYM SHADOW ${h}\n`);
    }
    const command = "make -s check";
    const before = await run(ws, command);
    expect(before.all, "the plant works: the command as written takes shadows").toContain("FLAKEGYM SHADOW");
    await run(ws, "rm -rf build");
    const after = await run(ws, demotedCommand({ command, profile: "c", testFiles: [], graded: [] }));
    expect(after.all).not.toContain("FLAKEGYM SHADOW");
    console.log(`c: ${headers.length} system headers shadowed; demoted: none taken`);
    // the project's own header still resolves and the graded tests ran (the bug is unfixed)
    expect(await exists(join(ws, "build", "test_tail")), after.all).toBe(true);
    expect(after.all).toMatch(/encode_one_byte_tail/);
  });
});

const nodeTestFiles = ["test/durations.test.mjs"];
describe("node: node --test runs the snapshot's test files and the hidden ones, nothing the agent added", () => {
  it("files planted where node --test looks are never run", async () => {
    const ws = await repoOf("durations-compound", "node", true);
    const mark = join(tmp.path, "node-planted.log");
    const plant = `import { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(mark)}, import.meta.url + "\\n");\n`;
    for (const f of [
      "test/zz-helper.mjs",
      "test/lib/setup.js",
      "planted.test.mjs",
      "src/x-test.cjs",
      "test.js",
    ])
      await mkdir(dirname(join(ws, f)), { recursive: true }).then(() => writeFile(join(ws, f), plant));
    const command = "node --test --test-reporter=tap";
    await run(ws, command);
    expect(await readFile(mark, "utf8").catch(() => ""), "the plant works").toMatch(/zz-helper/);
    await writeFile(mark, "");
    const after = await run(
      ws,
      demotedCommand({ command, profile: "node", testFiles: nodeTestFiles, graded: [] }),
    );
    expect(await readFile(mark, "utf8"), after.all).toBe("");
    expect(after.all).toMatch(/^ *(not )?ok \d+ - /m);
  });
});

const cargoOk = await has("cargo");
describe.skipIf(!cargoOk)("rust: cargo test runs no doctest of the agent's src/", () => {
  it("a doctest in src/lib.rs never runs", async () => {
    const ws = await repoOf("stats-empty-mean", "rust", true);
    const mark = join(ws, "doctest-ran");
    const lib = join(ws, "src", "lib.rs");
    await writeFile(
      lib,
      `${await readFile(lib, "utf8")}\n/// \`\`\`\n/// std::fs::write(${JSON.stringify(mark)}, "x").unwrap();\n/// \`\`\`\npub fn planted() {}\n`,
    );
    const command = "cargo test --offline --no-fail-fast";
    const env = { CARGO_TARGET_DIR: join(tmp.path, "rust-target") };
    await run(ws, command, env);
    expect(await exists(mark), "the plant works: the command as written runs doctests").toBe(true);
    await run(ws, `rm -f ${JSON.stringify(mark)}`);
    const after = await run(ws, demotedCommand({ command, profile: "rust", testFiles: [], graded: [] }), env);
    expect(await exists(mark), after.all).toBe(false);
    expect(after.all).toMatch(/test variance_of_values \.\.\. ok/);
  });
});

const goOk = await has("go");
describe.skipIf(!goOk)("go: go test reads no go.work", () => {
  it("a go.work planted at the root is ignored", async () => {
    const ws = await repoOf("truncate-runes", "go", true);
    await writeFile(join(ws, "go.work"), "go 1.21\n\nuse ./planted-module-that-is-not-there\n");
    const command = "go test -v -count=1 ./...";
    const env = { GOPROXY: "off" };
    const before = await run(ws, command, env);
    expect(before.all, "the plant works: go reads the go.work").toMatch(/planted-module-that-is-not-there/);
    const after = await run(ws, demotedCommand({ command, profile: "go", testFiles: [], graded: [] }), env);
    expect(after.all).not.toMatch(/planted-module-that-is-not-there/);
    expect(after.all).toMatch(/^(=== RUN|--- (PASS|FAIL))/m);
  });
});
