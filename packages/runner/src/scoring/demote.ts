import type { ProfileId } from "@flakegym/profiles";

/**
 * The hidden-test command with the workspace demoted (issue 42): the test runner, its plugins, the
 * interpreter's start-up, the compiler's system headers and the set of test files come from the
 * toolchain and the scorer, never from a file the agent could add. Only the code under test (and the
 * graded test files) resolve from the workspace. Files that steer a tool by their name (runner
 * configs, build files, `.cargo/`, `go.work`, `conftest.py`, `*.pth`...) are the snapshot's
 * already (scoring/protect.ts); this closes what protection cannot list: a module, header or test
 * file the tool looks up by a name the agent picks.
 *
 * - python (`python -m pytest` / `pytest`): a `-c` launcher — no workspace entry on `sys.path`
 *   while pytest and its plugins import, a finder that resolves every top-level module found
 *   outside the workspace there first (a workspace `iniconfig.py`, `pytest.py`, `_pytest/`,
 *   `difflib.py` never shadows the installed one), the workspace entries (the working directory,
 *   a `PYTHONPATH` into it) put back after, at the end; planted `__pycache__` removed first. The
 *   environment is the scorer's (an image's `PYTHONPATH` stays). The cache plugin stays: what it
 *   reads from `.pytest_cache` steers only `--lf`/`--ff`/`--nf`/`--sw`, and tests use its fixture.
 * - node (`node --test`): the test files named explicitly — the snapshot's tracked files node would
 *   discover plus the hidden test files; a file the agent added under `test/` is never run.
 * - rust (`cargo test`): `--tests` unless the command selects targets or a graded id is a doctest:
 *   doctests in the agent's `src/` never run.
 * - go (`go test`): `GOWORK=off`.
 * - c (any command of the profile): the compilers on `PATH` wrapped so `-I`/`-isystem` dirs become
 *   `-idirafter`: system headers are found before any workspace dir (`include/stdio.h` shadows
 *   nothing); the project's own headers still resolve.
 *
 * Pure: composition only; the command runs in the scoring script (scoring/script.ts).
 */

export interface DemoteInput {
  /** The task's test command as written. */
  readonly command: string;
  /** The task's profile, when known (every C command is wrapped; the rest are recognized by shape). */
  readonly profile?: ProfileId;
  /** Workspace-relative hidden test files. */
  readonly testFiles: readonly string[];
  /** Graded test ids (fail-to-pass and pass-to-pass). */
  readonly graded: readonly string[];
}

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * The pytest launcher (Python 2.7 and 3.x): drops the workspace's entries from `sys.path`, puts a
 * finder first that takes any top-level module found outside the workspace from there, imports
 * pytest, then appends the workspace's entries (the code under test) and runs pytest with the
 * command's arguments.
 */
export const PYTEST_LAUNCHER = [
  "import os, sys",
  "w = os.path.realpath(os.getcwd())",
  "_seen = {}",
  "def _ws(p):",
  "    if p not in _seen:",
  "        a = os.path.realpath(os.path.abspath(p or '.'))",
  "        _seen[p] = a == w or a.startswith(w + os.sep)",
  "    return _seen[p]",
  "_cut = [p for p in sys.path if _ws(p)]",
  "sys.path[:] = [p for p in sys.path if not _ws(p)]",
  "try:",
  "    from importlib.machinery import PathFinder",
  "    class _Installed(object):",
  "        @classmethod",
  "        def find_spec(cls, name, path=None, target=None):",
  "            if path is not None or name in sys.builtin_module_names:",
  "                return None",
  "            return PathFinder.find_spec(name, [p for p in sys.path if not _ws(p)])",
  "        @classmethod",
  "        def invalidate_caches(cls):",
  "            pass",
  "    sys.meta_path.insert(0, _Installed)",
  "except ImportError:",
  "    pass",
  "import pytest",
  "sys.path.extend(_cut if ('' in _cut or w in _cut) else _cut + [w])",
  "raise SystemExit(pytest.main(sys.argv[1:]))",
].join("\n");

/** `python[3[.N]] -m pytest ARGS` or `pytest ARGS` (after leading env assignments). */
const PYTEST =
  /^((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)(?:(python[0-9.]*)\s+-m\s+pytest|(pytest|py\.test))(?=\s|$)(.*)$/s;

function demotePytest(command: string): string | undefined {
  const m = PYTEST.exec(command.trim());
  if (!m) return undefined;
  const [, env = "", python, , rest = ""] = m;
  return (
    "find . -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null; " +
    `${env}${python ?? "python3"} -c ${q(PYTEST_LAUNCHER)}${rest}`
  );
}

/** What `node --test` discovers by default (Node 20): its documented name patterns. */
export const NODE_TEST_FILE =
  "(^|/)(test/.*\\.[cm]?js|[^/]*[._-]test\\.[cm]?js|test-[^/]*\\.[cm]?js|test\\.[cm]?js)$";

const NODE_TEST = /^node((?:\s+-[^\s]+)*)\s+--test(?=\s|$)(.*)$/s;

function demoteNodeTest(command: string, testFiles: readonly string[]): string | undefined {
  const m = NODE_TEST.exec(command.trim());
  if (!m) return undefined;
  const [, before = "", after = ""] = m;
  // a command that names its files already runs only those (a path argument: no leading dash)
  if (after.split(/\s+/).some((a) => a !== "" && !a.startsWith("-"))) return undefined;
  const hidden = testFiles.map((f) => q(f)).join(" ");
  return (
    `{ git -c core.fsmonitor= ls-files -z; printf '%s\\0' ${hidden}; } | grep -zE ${q(NODE_TEST_FILE)} | ` +
    `grep -zvE '(^|/)node_modules/' | sort -zu | ` +
    `xargs -0 -r sh -c 'exec node${before} --test${after} "$@"' node-test`
  );
}

/** A cargo test command selecting targets itself, or a doctest id: left as written. */
const CARGO_TARGETS = /\s--(lib|bins?|tests?|examples?|benches|bench|all-targets|doc)(?=[\s=]|$)/;
const CARGO_TEST = /^((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*cargo(?:\s+\+\S+)?\s+test)(?=\s|$)(.*)$/s;

function demoteCargoTest(command: string, graded: readonly string[]): string | undefined {
  const m = CARGO_TEST.exec(command.trim());
  if (!m) return undefined;
  const [, head = "", rest = ""] = m;
  const options = rest.split(/\s--\s/)[0] ?? "";
  if (CARGO_TARGETS.test(options) || graded.some((id) => / - .*\(line \d+\)/.test(id))) return undefined;
  return `${head} --tests${rest}`;
}

function demoteGoTest(command: string): string | undefined {
  return /^go\s+test(?=\s|$)/.test(command.trim()) ? `GOWORK=off ${command.trim()}` : undefined;
}

/** The compiler wrapper's body: `-I`/`-isystem` dirs after the system dirs (`r`: the real compiler). */
const CC_WRAPPER_BODY = [
  'n=$#; i=0; while [ "$i" -lt "$n" ]; do a=$1; shift; i=$((i + 1))',
  '  case $a in -I|-isystem) set -- "$@" -idirafter ;; -I-) ;;',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
  '  -I*) set -- "$@" -idirafter "${a#-I}" ;; -isystem*) set -- "$@" -idirafter "${a#-isystem}" ;;',
  '  *) set -- "$@" "$a" ;; esac; done',
  'exec "$r" "$@"',
].join("\n");

export const C_COMPILERS = ["cc", "gcc", "clang", "c++", "g++", "clang++", "cpp"] as const;

function demoteC(command: string): string {
  const make = C_COMPILERS.map(
    (c) =>
      `r=$(command -v ${c}) && { printf '#!/bin/sh\\nr=%s\\n' "'$r'"; cat "$d/body"; } > "$d/${c}" && chmod +x "$d/${c}"`,
  ).join("; ");
  return [
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    'd=$(mktemp -d "${TMPDIR:-/tmp}/flakegym-cc-XXXXXXXXXX") || exit 98',
    `cat > "$d/body" << 'FLAKEGYM_CC_EOF'\n${CC_WRAPPER_BODY}\nFLAKEGYM_CC_EOF`,
    `${make}; unset r`,
    `PATH="$d:$PATH" sh -c ${q(command)}; s=$?; rm -rf "$d"; exit $s`,
  ].join("\n");
}

/** The command the scoring script runs for `input`: demoted where recognized, else as written. Pure. */
export function demotedCommand(input: DemoteInput): string {
  const { command, profile, testFiles, graded } = input;
  if (profile === "c") return demoteC(command);
  return (
    demotePytest(command) ??
    demoteNodeTest(command, testFiles) ??
    demoteCargoTest(command, graded) ??
    demoteGoTest(command) ??
    command
  );
}
