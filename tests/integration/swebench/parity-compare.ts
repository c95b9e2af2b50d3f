import { execa } from "execa";
import { parseTestResults, resultLinePattern } from "../../../packages/runner/src/scoring/results.js";
import { withTestEnv } from "../../../packages/runner/src/tasks/swebench.js";
import type { SwebenchEnvSpec } from "../../../packages/runner/src/tasks/swebench-env-specs.js";
import { envSpecOf, installOfEnvSpec } from "../../../packages/runner/src/tasks/swebench-env-specs.js";
import { logParserOf } from "../../../packages/runner/src/tasks/swebench-log-parsers.js";
import { isUnpinnedPytest, PYTEST_BOUND } from "../../../packages/runner/src/tasks/swebench-test-tools.js";
import { djangoId, REPO_RUNNERS, testRunOf } from "../../../packages/runner/src/tasks/test-runners.js";

/** How our scorer reads one log for a repository: the script's real `grep -E` filter, then our parser. */
export async function ourReading(repo: string, log: string): Promise<Map<string, "passed" | "failed">> {
  const runner = REPO_RUNNERS[repo];
  const format = runner === "django" ? "django" : runner === "sympy" ? "sympy" : "pytest";
  const parser = format === "pytest" ? logParserOf(repo) : undefined;
  const kept = await execa("grep", ["-E", resultLinePattern(format, parser)], { input: log, reject: false });
  return parseTestResults(format, kept.stdout, parser);
}

/** The harness's parser name → the reading we give its repositories. */
export const READING_OF_PARSER: Readonly<Record<string, string>> = {
  parse_log_pytest: "pytest",
  parse_log_pytest_options: "pytest-short-paths",
  parse_log_pytest_v2: "pytest-spaced",
  parse_log_seaborn: "seaborn",
  parse_log_matplotlib: "matplotlib",
  parse_log_django: "django",
  parse_log_sympy: "sympy",
};

/** Our reading of a repository: its own runner, else its pytest-family reading. */
export const ourReadingName = (repo: string): string => REPO_RUNNERS[repo] ?? logParserOf(repo);

export interface IdComparison {
  readonly compared: number;
  readonly agree: number;
  /** Ids we fail that the harness passes only because its last report wins (ours: any failure fails). */
  readonly stricter: string[];
  readonly mismatches: string[];
  /** Ids we pass that the harness's map lacks (a cut form, a line it skips): never in its lists. */
  readonly extraPasses: string[];
}

/**
 * Every id in the harness's status map graded both ways (PASSED/XFAIL pass), in our spelling of
 * it (Django's pre-3.11 form). Pure.
 */
export function compareReadings(
  repo: string,
  theirs: Readonly<Record<string, string>>,
  ours: ReadonlyMap<string, "passed" | "failed">,
  reportedBothWays: ReadonlySet<string>,
): IdComparison {
  const spell = (id: string) => (REPO_RUNNERS[repo] === "django" ? djangoId(id) : id);
  const out = { compared: 0, agree: 0, stricter: [] as string[], mismatches: [] as string[] };
  const seen = new Set<string>();
  for (const [id, status] of Object.entries(theirs)) {
    const mine = spell(id);
    seen.add(mine);
    const theyPass = status === "PASSED" || status === "XFAIL";
    const wePass = ours.get(mine) === "passed";
    out.compared++;
    if (theyPass === wePass) out.agree++;
    else if (theyPass && reportedBothWays.has(mine)) out.stricter.push(`${id} (${status})`);
    else out.mismatches.push(`${id}: harness ${status}, ours ${ours.get(mine) ?? "not reported"}`);
  }
  const extraPasses = [...ours].filter(([id, o]) => o === "passed" && !seen.has(id)).map(([id]) => id);
  return { ...out, extraPasses };
}

/** What of a repository/version spec our install and test command do not honour (empty: all). Pure. */
export function specGaps(repo: string, version: string, theirs: SwebenchEnvSpec): string[] {
  const gaps: string[] = [];
  const found = envSpecOf(repo, version);
  if (!found.ok) return [`no facts: ${found.reason}`];
  const kept = Object.fromEntries(Object.entries(theirs).filter(([k]) => FACT_KEYS.includes(k)));
  if (JSON.stringify(sortKeys(found.spec)) !== JSON.stringify(sortKeys(kept)))
    gaps.push("facts differ from the package's");
  const { install, notes } = installOfEnvSpec(repo, found.spec);
  const all = install.join("\n");
  for (const p of found.spec.pip_packages ?? []) {
    const want = isUnpinnedPytest(p) ? PYTEST_BOUND : p;
    if (!all.includes(want)) gaps.push(`pip package ${p} not installed`);
  }
  const packages = found.spec.packages?.trim() ?? "";
  if (packages === "environment.yml" && !notes.some((n) => n.includes("environment.yml")))
    gaps.push("conda environment neither built nor refused");
  for (const c of found.spec.pre_install ?? [])
    if (!all.includes(c) && !notes.some((n) => n.includes(c)))
      gaps.push(`pre_install '${c}' neither run nor noted`);
  if (found.spec.install && !all.includes(found.spec.install)) gaps.push("install command not run");
  gaps.push(...testCommandGaps(repo, version, found.spec));
  return gaps;
}

/** Where our suite command differs from the spec's test command in what decides the log. Pure. */
function testCommandGaps(repo: string, version: string, spec: SwebenchEnvSpec): string[] {
  const testCmd = Array.isArray(spec.test_cmd) ? spec.test_cmd.join(" && ") : (spec.test_cmd ?? "");
  const runner = REPO_RUNNERS[repo] ?? "pytest";
  const file =
    runner === "django"
      ? "tests/x/tests.py"
      : runner === "sympy"
        ? "sympy/x/tests/test_x.py"
        : "tests/test_x.py";
  const id = runner === "django" ? "test_a (x.tests.C)" : runner === "sympy" ? "test_a" : `${file}::test_a`;
  const run = testRunOf({ runner, failToPass: [id], passToPass: [], testFiles: [file] });
  if (!("run" in run) || run.run.kind !== "suite") return ["no suite command"];
  const ours = withTestEnv(run.run, { repo, version, install: undefined });
  const cmd = ours.kind === "suite" ? ours.command : "";
  const gaps: string[] = [];
  const need = (flag: string) => {
    if (testCmd.includes(flag) && !cmd.includes(flag)) gaps.push(`test command lacks ${flag}`);
  };
  for (const f of [
    "-rA",
    "--verbosity 2",
    "--settings=test_sqlite",
    "--parallel 1",
    "bin/test -C --verbose",
    "PYTHONWARNINGS=",
  ])
    need(f);
  if (/^tox\b/.test(testCmd))
    gaps.push("runs pytest -rA directly where the harness runs it through tox --current-env");
  if (runner === "django" && !testCmd.includes("--parallel"))
    gaps.push("adds --settings=test_sqlite --parallel 1, which this version's command leaves out");
  return gaps;
}

/** The facts we keep per version (packages/runner/scripts/swebench-specs.ts). */
const FACT_KEYS = [
  "python",
  "packages",
  "pip_packages",
  "pre_install",
  "install",
  "test_cmd",
  "eval_commands",
];

const sortKeys = (o: object) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
