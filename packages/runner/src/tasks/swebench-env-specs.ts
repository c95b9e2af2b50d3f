import { z } from "zod";
import { SWEBENCH_ENV_FACTS, SWEBENCH_REQS_PATHS, SWEBENCH_SPECS_SOURCE } from "./swebench-env-specs.data.js";
import {
  boundPackageList,
  boundTestTools,
  ENSURE_PYTEST,
  PYTEST_BOUND_REASON,
  RELEASE_DRIFT_PINS,
} from "./swebench-test-tools.js";
import { shellQuote } from "./task-spec.js";

/**
 * The environment a SWE-bench row's repository needs, per repository and version, as data we own
 * (`swebench-env-specs.data.ts`, regenerated from the `swebench` package by
 * `npm run swebench:specs -w @flakegym/runner`), and the snapshot install commands made from it:
 * a venv in the snapshot's deps dir (`$FLAKEGYM_DEPS/venv`, kept with the snapshot and present in
 * every later sandbox), the listed packages from PyPI, then the repository's own install command.
 * Pure.
 */

/** One repository version's facts, under the names the source uses. */
export const SwebenchEnvSpec = z
  .object({
    python: z
      .string()
      .describe("the Python version SWE-bench's image uses (facts; the snapshot uses the profile's python3)"),
    packages: z
      .string()
      .optional()
      .describe(
        "packages to install: a space-separated list, `requirements.txt` (the repo's files) or `environment.yml` (conda)",
      ),
    pip_packages: z.array(z.string()).optional().describe("pinned pip requirements"),
    pre_install: z.array(z.string()).optional().describe("commands run before the install"),
    install: z.string().optional().describe("installs the repository itself"),
    test_cmd: z
      .union([z.string(), z.array(z.string())])
      .optional()
      .describe("SWE-bench's test command (facts)"),
    eval_commands: z
      .array(z.string())
      .optional()
      .describe("commands SWE-bench runs before its tests (facts)"),
  })
  .strict();
export type SwebenchEnvSpec = z.infer<typeof SwebenchEnvSpec>;
/** Per repository: its distinct specs, and the index of each version's spec among them. */
export type SwebenchEnvFacts = Readonly<
  Record<
    string,
    { readonly specs: readonly SwebenchEnvSpec[]; readonly versions: Readonly<Record<string, number>> }
  >
>;

/** Where the facts come from, as one line for a task's metadata. */
export const SWEBENCH_SPECS_ORIGIN = `${SWEBENCH_SPECS_SOURCE.package} ${SWEBENCH_SPECS_SOURCE.version} (PyPI), ${SWEBENCH_SPECS_SOURCE.module}`;

/** The venv the install makes, as the sandbox sees it (`FLAKEGYM_DEPS` is the deps dir; see workers/local/shape.ts). */
export const ROW_VENV = "$FLAKEGYM_DEPS/venv";
const ACTIVATE = `. "${ROW_VENV}/bin/activate"`;

/**
 * The variable naming, inside a snapshot build's sandbox, the interpreter a task's venv is made with
 * (the build sets it from snapshots/python-choice.ts; unset, the sandbox's python3 is used).
 */
export const PYTHON_INTERPRETER_ENV = "FLAKEGYM_PYTHON_INTERPRETER";

/**
 * Makes the venv with the interpreter the snapshot build chose for the row's Python
 * (PYTHON_INTERPRETER_ENV, see snapshots/python-choice.ts), else the sandbox's python3; a sandbox without a deps dir (FLAKEGYM_DEPS unset) stops here saying so, rather than writing /venv. */
export const VENV_CREATE = `[ -n "$FLAKEGYM_DEPS" ] || { echo 'no deps dir in this sandbox (FLAKEGYM_DEPS is unset)' >&2; exit 1; }; "\${${PYTHON_INTERPRETER_ENV}:-python3}" -m venv "${ROW_VENV}"`;

/** A test command run in the row's venv when the snapshot has one (else the profile's python3, as before). Pure. */
export function inRowVenv(command: string): string {
  return `if [ -f "${ROW_VENV}/bin/activate" ]; then ${ACTIVATE}; fi; ${command}`;
}

/** A facts lookup: the spec, or the field that is wrong and why. */
export type EnvSpecLookup =
  | { readonly ok: true; readonly spec: SwebenchEnvSpec; readonly source: string }
  | { readonly ok: false; readonly field: "repo" | "version"; readonly reason: string };

/** Repository names compare case-insensitively (`Project-MONAI/MONAI` rows, lower-case facts). */
function factsOf(repo: string, facts: SwebenchEnvFacts): [string, SwebenchEnvFacts[string]] | undefined {
  const want = repo.replace(/\.git$/, "").toLowerCase();
  return Object.entries(facts).find(([name]) => name.toLowerCase() === want);
}

/**
 * The facts for a row's `repo` at its `version`: a repository the facts do not know is field
 * `repo`, a version they do not list for it (or none given) is field `version`; both say what to
 * do (give the row an `install` column). Pure.
 */
export function envSpecOf(
  repo: string,
  version: string | number | null | undefined,
  facts: SwebenchEnvFacts = SWEBENCH_ENV_FACTS,
): EnvSpecLookup {
  const found = factsOf(repo, facts);
  if (found === undefined) {
    return {
      ok: false,
      field: "repo",
      reason: `'${repo}' has no install facts (known: the ${Object.keys(facts).length} Python repositories of ${SWEBENCH_SPECS_ORIGIN}): give the row an 'install' column with the commands that install its dependencies`,
    };
  }
  const [name, { specs, versions }] = found;
  const v = version == null ? "" : String(version).trim();
  const at = Object.hasOwn(versions, v) ? versions[v] : undefined;
  const spec = at === undefined ? undefined : specs[at];
  if (spec === undefined) {
    const known = Object.keys(versions).join(", ");
    return {
      ok: false,
      field: "version",
      reason: `${v === "" ? "missing" : `'${v}' is not a version of ${name}`} in the install facts (known: ${known}): set 'version' to one of them, or give the row an 'install' column`,
    };
  }
  return {
    ok: true,
    spec: SwebenchEnvSpec.parse(spec),
    source: `${SWEBENCH_SPECS_ORIGIN}: MAP_REPO_VERSION_TO_SPECS_PY['${name}']['${v}']`,
  };
}

/**
 * A pre-install command that edits the repository's own files (`sed -i …`, `grep -q … && sed -i …`
 * on setup.py, tox.ini): the only kind run here. The others set up SWE-bench's image — system
 * packages, locales, downloads into its paths (`/testbed`, `/etc`) — which a sandbox without root
 * cannot do. Pure.
 */
export function isWorkspaceEdit(command: string): boolean {
  return /^\s*(sed|grep) /.test(command) && !/\/etc\/|\/testbed\b|\b(apt-get|wget|curl)\b/.test(command);
}

/**
 * The snapshot install commands for a repository's facts, and notes on what was not reproduced
 * (system commands dropped, a conda environment, a different Python). Every command runs in the
 * venv. Pure.
 */
export function installOfEnvSpec(
  repo: string,
  spec: SwebenchEnvSpec,
  reqsPaths: Readonly<Record<string, readonly string[]>> = SWEBENCH_REQS_PATHS,
): { install: string[]; notes: string[] } {
  const notes: string[] = [
    `install from ${repo}'s facts; python: SWE-bench runs this row under Python ${spec.python}, and so does flakegym: the snapshot build takes a CPython ${spec.python} from the first provider that has one (--python, a Nix profile, uv, pyenv, python${spec.python} on PATH) and refuses the row without one unless --allow-python-mismatch; the snapshot manifest's envInstall.python records wanted, used and the provider`,
  ];
  const inVenv = (c: string) => `${ACTIVATE} && ${c}`;
  const install = [VENV_CREATE];
  const pre = spec.pre_install ?? [];
  const kept = pre.filter(isWorkspaceEdit);
  const dropped = pre.filter((c) => !isWorkspaceEdit(c));
  if (dropped.length > 0) {
    // the sandbox binds the host's /usr: graphviz (`dot`) is the host's, from scripts/ensure-system-deps
    const host = dropped.some((c) => /\bgraphviz\b/.test(c))
      ? "; graphviz's dot comes from the host's /usr (scripts/ensure-system-deps installs it)"
      : "";
    notes.push(`not run (system setup, not reproduced in the sandbox${host}): ${dropped.join("; ")}`);
  }
  install.push(...kept.map(inVenv));
  const packages = spec.packages?.trim() ?? "";
  if (packages === "requirements.txt") {
    const paths = reqsPaths[repo] ?? reqsPaths[repo.toLowerCase()] ?? [];
    for (const p of paths)
      install.push(inVenv(`if [ -f ${shellQuote(p)} ]; then python -m pip install -r ${shellQuote(p)}; fi`));
  } else if (packages === "environment.yml") {
    notes.push(
      "its conda environment (environment.yml) is not built: only the repository's own install runs",
    );
  } else if (packages !== "") {
    const listed = boundPackageList(packages);
    if (listed.bounded) notes.push(PYTEST_BOUND_REASON);
    install.push(inVenv(`python -m pip install ${listed.packages}`));
  }
  if (spec.pip_packages && spec.pip_packages.length > 0) {
    const pinned = boundTestTools(spec.pip_packages);
    if (pinned.bounded) notes.push(PYTEST_BOUND_REASON);
    install.push(inVenv(`python -m pip install ${pinned.reqs.map(shellQuote).join(" ")}`));
  }
  const drift = RELEASE_DRIFT_PINS[repo.toLowerCase()];
  if (drift) {
    install.push(inVenv(`python -m pip install ${drift.reqs.map(shellQuote).join(" ")}`));
    notes.push(drift.reason);
  }
  // the runner of every Python row needs pytest (django's and sympy's runners do not, but it is
  // harmless), bounded, and before the repository's own install: an unpinned `pytest` in its extras
  // (sphinx's `.[test]`) is then already met, not today's newest (8.4 fails tests that return a
  // value; SWE-bench's sphinx images ran 8.3). pytest's own rows install pytest themselves.
  const selfTested = repo.toLowerCase() === "pytest-dev/pytest";
  if (!selfTested) install.push(inVenv(ENSURE_PYTEST));
  if (spec.install) install.push(inVenv(spec.install));
  if (selfTested) install.push(inVenv(ENSURE_PYTEST));
  return { install, notes };
}
