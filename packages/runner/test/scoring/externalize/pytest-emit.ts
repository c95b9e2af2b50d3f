import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { execa } from "execa";
import type { Externalized } from "../../../src/scoring/externalize/rewrite.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { pytestUnavailable } from "../../helpers/guarded-pytest.js";
import { hostPythonSkipReason } from "../../helpers/host-python.js";

/**
 * Writes `files` into `dir` and runs the host's pytest over its tests/ with the emission channel
 * (`FLAKEGYM_EMIT`) pointed at a file there: what a rewritten test file printed to the host, and
 * pytest's own result as written.
 */
export async function pytestEmitting(dir: string, files: Readonly<Record<string, string | Uint8Array>>) {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const emit = join(dir, "emit");
  const p = await execa("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
    cwd: dir,
    env: { FLAKEGYM_EMIT: emit, PYTHONPATH: dir },
    reject: false,
  });
  return { p, emitted: await readFile(emit, "utf8").catch(() => undefined) };
}

/**
 * Whether this file's tests can run: `noHostPython` skips the rewriter's runs, `noPytest` also the
 * rewritten file's pytest runs (each reason printed once).
 */
export async function pytestSkips(): Promise<{ noHostPython: boolean; noPytest: boolean }> {
  const noPytest = await pytestUnavailable("the host rewriter's runs");
  return { noHostPython: hostPythonSkipReason() !== undefined, noPytest };
}

/**
 * Runs and judges one implementation against a rewrite: `lib.py` (the code under test) beside the
 * test file at `testPath`, run by pytest in `root/<name>`, the emissions judged on the host over
 * `graded` (the ids in the run). `tests` replaces the rewritten file (the file as written).
 */
export function runAndJudge(
  root: string,
  r: Externalized,
  graded: readonly string[],
  testPath = "tests/test_lib.py",
) {
  const rewritten = r.files.find((f) => f.path === testPath)?.content;
  if (!rewritten) throw new Error(`runAndJudge: the rewrite has no file ${testPath}`);
  return async (impl: string, name: string, tests: string | Uint8Array = rewritten) => {
    const { p, emitted } = await pytestEmitting(join(root, name), { "lib.py": impl, [testPath]: tests });
    return { p, verdict: externalVerdict(graded, r.sites, emitted) };
  };
}
