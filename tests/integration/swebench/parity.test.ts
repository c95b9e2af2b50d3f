import { writeFile } from "node:fs/promises";
import { createDeadline } from "@flakegym/nomad-jobs";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { djangoLogEvents, sympyLogEvents } from "../../../packages/runner/src/tasks/runner-logs.js";
import type { SwebenchEnvSpec } from "../../../packages/runner/src/tasks/swebench-env-specs.js";
import { logParserOf, pytestLogEvents } from "../../../packages/runner/src/tasks/swebench-log-parsers.js";
import { REPO_RUNNERS } from "../../../packages/runner/src/tasks/test-runners.js";
import { djangoLog, HAND_WRITTEN, type LogSample, pytestLogs, sympyLog } from "./corpus.js";
import {
  compareReadings,
  ourReading,
  ourReadingName,
  READING_OF_PARSER,
  specGaps,
} from "./parity-compare.js";
import { ensureVenv, PARITY_CACHE } from "./venvs.js";

console.log(`swebench parity venvs: ${PARITY_CACHE}`);

/**
 * Our SWE-bench specs and log readings against the `swebench` package from PyPI (`npm run
 * test:swebench-parity`): its MAP_REPO_VERSION_TO_SPECS_PY (4.1.0, the last release that carries
 * it) against our facts, install and test command per repository/version; its per-repository log
 * parsers (4.1.0 and 5.0.2) against ours on logs real runners printed (corpus.ts). Venvs are kept
 * in the user's cache (venvs.ts). Skips, saying why, when not asked for or when pip cannot
 * install a package.
 */

const ASKED = process.env.FLAKEGYM_SWEBENCH_PARITY === "1";
if (!ASKED)
  console.warn(
    "swebench parity skipped: run it with `npm run test:swebench-parity` (installs swebench and pytest releases from PyPI)",
  );

const HARNESS = ["4.1.0", "5.0.2"] as const;
const PYTEST = { "7.4.0": "pytest==7.4.0", "8.3.5": "pytest==8.3.5", "9.x": "pytest>=9,<10" } as const;

interface OracleAnswer {
  readonly version: string;
  readonly parsers: Record<string, string>;
  readonly maps: Record<string, string>[];
  readonly specs: Record<string, Record<string, SwebenchEnvSpec & Record<string, unknown>>> | null;
}

let tmp: TempDir;
let skip: string | undefined;
const answers = new Map<string, OracleAnswer>();
let cases: { repo: string; sample: LogSample }[] = [];

async function ask(python: string, payload: object, signal: AbortSignal): Promise<OracleAnswer> {
  const file = `${tmp.path}/cases.json`;
  await writeFile(file, JSON.stringify(payload));
  const r = await execa(python, [new URL("./oracle.py", import.meta.url).pathname, file], {
    cancelSignal: signal,
    maxBuffer: 512 * 1024 * 1024,
  });
  return JSON.parse(r.stdout) as OracleAnswer;
}

beforeAll(async () => {
  if (!ASKED) return;
  tmp = await makeTempDir("flakegym-swebench-parity-");
  using deadline = createDeadline({
    timeout: { limit: "swebench parity setup (pip installs, log runs)", ms: 1_500_000 },
  });
  const { signal } = deadline;
  const harness: Record<string, string> = {};
  for (const v of HARNESS) {
    const venv = await ensureVenv(`swebench-${v}`, [`swebench==${v}`], signal);
    if ("skip" in venv) {
      skip = venv.skip;
      return;
    }
    harness[v] = venv.python;
  }
  const pythons: Record<string, string> = {};
  for (const [release, req] of Object.entries(PYTEST)) {
    const venv = await ensureVenv(`pytest-${release}`, [req], signal);
    if ("skip" in venv) {
      skip = venv.skip;
      return;
    }
    pythons[release] = venv.python;
  }
  const runners = await ensureVenv("runners", ["sympy==1.12", "django>=4.2,<5"], signal);
  if ("skip" in runners) {
    skip = runners.skip;
    return;
  }
  const samples = [
    ...(await pytestLogs(tmp.path, pythons, signal)),
    await djangoLog(tmp.path, runners.python, signal),
    await sympyLog(tmp.path, runners.python, signal),
    ...HAND_WRITTEN,
  ];
  const first = await ask(harness["5.0.2"]!, { cases: [] }, signal);
  const repos = Object.keys(first.parsers);
  cases = samples.flatMap((sample) =>
    repos
      .filter(
        (repo) => (REPO_RUNNERS[repo] ?? "pytest") === (sample.kind === "pytest" ? "pytest" : sample.kind),
      )
      .map((repo) => ({ repo, sample })),
  );
  for (const v of HARNESS)
    answers.set(
      v,
      await ask(harness[v]!, { cases: cases.map((c) => ({ repo: c.repo, log: c.sample.log })) }, signal),
    );
}, 1_600_000);

afterAll(async () => {
  await tmp?.cleanup();
});

/** Ids our events report both passed and not passed, for a repository and log. */
function reportedBothWays(repo: string, log: string): Set<string> {
  const runner = REPO_RUNNERS[repo];
  const events =
    runner === "django"
      ? djangoLogEvents(log)
      : runner === "sympy"
        ? sympyLogEvents(log)
        : pytestLogEvents(logParserOf(repo), log);
  const pass = new Set(events.filter((e) => e.status === "PASSED" || e.status === "XFAIL").map((e) => e.id));
  return new Set(
    events.filter((e) => pass.has(e.id) && e.status !== "PASSED" && e.status !== "XFAIL").map((e) => e.id),
  );
}

describe.skipIf(!ASKED)("swebench parity (PyPI swebench 4.1.0 and 5.0.2)", () => {
  it("reads each repository with the parser the harness names for it", (ctx) => {
    if (skip) return ctx.skip(skip);
    for (const [v, a] of answers) {
      const rows = Object.entries(a.parsers).map(([repo, fn]) => ({
        repo,
        theirs: READING_OF_PARSER[fn] ?? fn,
        ours: ourReadingName(repo),
      }));
      const wrong = rows.filter((r) => r.theirs !== r.ours);
      console.log(
        `parity: swebench ${v}: ${rows.length - wrong.length}/${rows.length} repositories read with the harness's parser`,
      );
      expect(wrong).toEqual([]);
    }
  });

  it("grades every id of every log as the harness does", async (ctx) => {
    if (skip) return ctx.skip(skip);
    const mismatches: string[] = [];
    for (const [v, a] of answers) {
      let compared = 0;
      let agree = 0;
      const stricter: string[] = [];
      let extra = 0;
      for (const [i, c] of cases.entries()) {
        const ours = await ourReading(c.repo, c.sample.log);
        const r = compareReadings(c.repo, a.maps[i]!, ours, reportedBothWays(c.repo, c.sample.log));
        compared += r.compared;
        agree += r.agree;
        extra += r.extraPasses.length;
        stricter.push(...r.stricter.map((s) => `${c.repo} on ${c.sample.name}: ${s}`));
        mismatches.push(...r.mismatches.map((m) => `swebench ${v}: ${c.repo} on ${c.sample.name}: ${m}`));
      }
      console.log(
        `parity: swebench ${v}: ${cases.length} (repository, log) cases, ${agree}/${compared} graded ids agree; ${stricter.length} stricter (reported both ways: any failure fails); ${extra} ids we pass that its map lacks (never in its lists)`,
      );
      for (const s of [...new Set(stricter.map((x) => x.replace(/^[^ ]+ on [^:]+: /, "")))].slice(0, 5))
        console.log(`  stricter: ${s}`);
    }
    expect(mismatches).toEqual([]);
  });

  it("honours every repository/version spec: facts, pins, pre-installs, install and test command", (ctx) => {
    if (skip) return ctx.skip(skip);
    const specs = answers.get("4.1.0")?.specs;
    expect(specs).not.toBeNull();
    const gaps: Record<string, string[]> = {};
    let total = 0;
    for (const [repo, versions] of Object.entries(specs ?? {})) {
      for (const [version, spec] of Object.entries(versions)) {
        total++;
        const g = specGaps(repo, version, spec);
        if (g.length > 0) gaps[`${repo} ${version}`] = g;
      }
    }
    const kinds = new Map<string, number>();
    for (const g of Object.values(gaps))
      for (const x of g) kinds.set(x.replace(/'.*'/, "'…'"), (kinds.get(x.replace(/'.*'/, "'…'")) ?? 0) + 1);
    console.log(
      `parity: swebench 4.1.0 specs: ${total - Object.keys(gaps).length}/${total} repository/version specs honoured in full`,
    );
    for (const [k, n] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`  ${n}× ${k}`);
    // the facts themselves must be the package's, every pin installed, every pre-install run or noted
    const hard = Object.entries(gaps).flatMap(([k, g]) =>
      g
        .filter((x) => /facts differ|not installed|neither|install command not run|no facts|lacks/.test(x))
        .map((x) => `${k}: ${x}`),
    );
    expect(hard).toEqual([]);
  });
});
