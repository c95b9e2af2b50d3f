/**
 * The test tools a SWE-bench row's environment gets beyond its facts. The harness installs
 * `pytest` unpinned for some repositories (requests' `packages: pytest`, seaborn's and
 * matplotlib's `pip_packages`), so it ran whichever pytest was current when its images were
 * built (the 8.x line, 2024); an unpinned install today takes a newer major, whose ids and plugin
 * behaviour the recorded FAIL_TO_PASS / PASS_TO_PASS lists never saw. An unpinned pytest is
 * pinned to that line's bound instead; pip then takes the newest release the row's Python
 * supports (7.0 on 3.6, 7.4 on 3.7). Pure.
 */

/** The bound an unpinned pytest gets, with why, for the task's notes. */
export const PYTEST_BOUND = "pytest<8.4";
export const PYTEST_BOUND_REASON = `pytest is unpinned in SWE-bench's facts for this version: installed as '${PYTEST_BOUND}' (the line its harness images were built with), not today's newest`;

/** A requirement that names pytest with no version: `pytest`, `pytest[extra]`. Pure. */
export function isUnpinnedPytest(req: string): boolean {
  return /^pytest(\[[^\]]*\])?$/i.test(req.trim());
}

/** Requirements with an unpinned pytest bounded; whether one was. Pure. */
export function boundTestTools(reqs: readonly string[]): { reqs: string[]; bounded: boolean } {
  let bounded = false;
  const out = reqs.map((r) => {
    if (!isUnpinnedPytest(r)) return r;
    bounded = true;
    return PYTEST_BOUND;
  });
  return { reqs: out, bounded };
}

/**
 * A space-separated package list (the facts' `packages`, shell words as the harness runs them)
 * with an unpinned pytest word replaced by the quoted bound; every other word is kept as written. Pure.
 */
export function boundPackageList(packages: string): { packages: string; bounded: boolean } {
  let bounded = false;
  const out = packages
    .split(/(\s+)/)
    .map((w) => {
      if (!isUnpinnedPytest(w)) return w;
      bounded = true;
      return `'${PYTEST_BOUND}'`;
    })
    .join("");
  return { packages: out, bounded };
}

/**
 * The command that makes sure pytest is there when the facts install none (django's and sympy's
 * runners do not need it, the other rows' suites do): bounded like an unpinned one.
 */
export const ENSURE_PYTEST = `{ python -c 'import pytest' 2>/dev/null || python -m pip install '${PYTEST_BOUND}'; }`;

/**
 * The environment assignments a SWE-bench test command starts with (sympy's
 * `PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test …`, which keeps warnings
 * from breaking its result lines), as a prefix for our command; "" when it has none. Pure.
 */
export function testCommandEnv(testCmd: string | readonly string[] | undefined): string {
  const first = Array.isArray(testCmd) ? testCmd[0] : testCmd;
  if (typeof first !== "string") return "";
  const m = /^(\s*[A-Za-z_][A-Za-z0-9_]*=('[^']*'|[^\s'"]*)\s+)+/.exec(first);
  return m ? m[0].trim() : "";
}

/** The command every pytest suite starts with (test-runners.ts), before the files it names. */
const OUR_PYTEST = "python3 -m pytest -rA -p no:cacheprovider ";

/**
 * tox-current-env links `.tox/<env>/bin/python` to the running interpreter; in SWE-bench's image
 * that is a conda environment's own binary, here a venv's `bin/python` — and an interpreter
 * invoked through a second link looks for `pyvenv.cfg` beside that link only, so CPython (3.9
 * checked) starts without the venv (`No module named pytest`). The env dir is therefore made
 * first as a view of the venv (its pyvenv.cfg, its lib/): any link in its bin/ then runs the
 * venv. A left-over `.tox` (the agent's) is removed first. Pure.
 */
function toxEnvOfVenv(env: string): string {
  const dir = `.tox/${env}`;
  return `rm -rf .tox && if [ -n "$VIRTUAL_ENV" ]; then mkdir -p ${dir} && cp "$VIRTUAL_ENV/pyvenv.cfg" ${dir}/ && ln -s "$VIRTUAL_ENV/lib" ${dir}/lib; fi && `;
}

/**
 * A pytest suite's command as SWE-bench's harness runs the repository's tests: where its test
 * command is tox in the current environment (sphinx: `tox --current-env -epy39 -v --`), the same
 * tox run, which reads the repository's `tox.ini` (a protected file) for the interpreter flags
 * (`python -X dev`), the warnings filter and pytest options (`--color yes`; the facts' pre-install
 * `sed` adds `-rA`) that its recorded results were made with; our files and `-p no:cacheprovider`
 * are its arguments after `--`. Other commands are kept. Pure.
 */
export function harnessSuiteCommand(
  command: string,
  testCmd: string | readonly string[] | undefined,
): string {
  const first = Array.isArray(testCmd) ? testCmd[0] : testCmd;
  if (typeof first !== "string" || !command.startsWith(OUR_PYTEST)) return command;
  const tox = /^tox --current-env(?: -e\s*[\w.-]+| -v)* --$/.exec(first.trim());
  const env = tox ? / -e\s*([\w.-]+)/.exec(tox[0])?.[1] : undefined;
  if (!tox || env === undefined) return command;
  return `${toxEnvOfVenv(env)}${tox[0]} -p no:cacheprovider ${command.slice(OUR_PYTEST.length)}`;
}

/**
 * Pins for packages released after SWE-bench's environment images were built (2024), that break
 * a repository's tests where its facts leave them unpinned, installed before the repository so its
 * own install keeps them: docutils 0.22 (2025) removed `docutils.utils.roman`, which Sphinx's
 * LaTeX writer imports (every sphinx test building with it errors `No module named 'roman'`).
 */
export const RELEASE_DRIFT_PINS: Readonly<
  Record<string, { readonly reqs: readonly string[]; readonly reason: string }>
> = {
  "sphinx-doc/sphinx": {
    reqs: ["docutils<0.22"],
    reason:
      "docutils bounded below 0.22 (released after SWE-bench's images were built; it removed docutils.utils.roman, which Sphinx's LaTeX writer imports)",
  },
};
