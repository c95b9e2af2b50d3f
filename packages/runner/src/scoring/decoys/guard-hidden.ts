import { randomInt } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join, posix } from "node:path";
import type { ResultFormat } from "../../tasks/task-spec.js";
import type { ExternalSite } from "../externalize/canon.js";
import { decoysOnly, externalizeGraded } from "../externalize/guard.js";
import { asWrittenFiles } from "../externalize/run.js";
import { isTestDirName } from "../protect.js";
import { type InstalledFile, regularFile } from "../snapshot-files.js";
import { type DecoyPlan, type GuardReport, guardFiles } from "./guard.js";
import { readableTexts } from "./readable.js";
import type { InertSites } from "./site-key.js";

/**
 * The hidden test files of a suite task guarded by decoys, with the repository's own test files
 * that define graded tests (pass-to-pass tests usually live there) added from the pristine
 * snapshot, so every graded test is renamed and twinned wherever it is defined. Files of the code
 * under test (a Rust `src/` file with a `mod tests`) are never taken: the agent owns them.
 */

/** Directories never searched for test files. */
const SKIP = new Set([".git", "node_modules", "target", "build", "dist", "vendor", "__pycache__", ".venv"]);
const MAX_FILES = 5_000;
const MAX_BYTES = 512 * 1024;

/** Whether `path` is a test-only file of `format` (never code under test). Pure. */
export function isTestFile(format: ResultFormat, path: string): boolean {
  const parts = path.split("/");
  const base = parts.at(-1)!;
  const inTestDir = parts.slice(0, -1).some(isTestDirName);
  switch (format) {
    case "pytest":
      return base.endsWith(".py") && (/^test_|_test\.py$/.test(base) || inTestDir) && base !== "conftest.py";
    case "libtest":
      return base.endsWith(".rs") && parts[0] === "tests";
    case "gotest":
      return base.endsWith("_test.go");
    case "tap":
      return /\.(m|c)?[jt]s$/.test(base) && (/\.test\.|\.spec\./.test(base) || inTestDir);
    case "check-h":
      return base.endsWith(".c") && inTestDir;
    case "django":
    case "sympy":
      return false;
  }
}

async function walk(root: string, rel: string, out: string[]): Promise<void> {
  if (out.length >= MAX_FILES) return;
  const entries = await readdir(join(root, rel), { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory() && !SKIP.has(e.name)) await walk(root, path, out);
    else if (e.isFile()) out.push(path);
  }
}

/** Test files found per (snapshot, format, ids): a snapshot never changes, so one walk serves every scoring. */
const found = new Map<string, Promise<string[]>>();
const MAX_REMEMBERED = 32;

/** The snapshot's test-only files that may define graded tests (pytest ids name their file). */
function candidatePaths(format: ResultFormat, workspace: string, ids: readonly string[]): Promise<string[]> {
  if (format === "pytest") return Promise.resolve([...new Set(ids.map((id) => id.split("::")[0]!))]);
  const key = `${format}\0${workspace}`;
  let hit = found.get(key);
  if (!hit) {
    if (found.size >= MAX_REMEMBERED) found.delete(found.keys().next().value!);
    hit = (async () => {
      const paths: string[] = [];
      await walk(workspace, "", paths);
      return paths.filter((p) => isTestFile(format, p));
    })();
    found.set(key, hit);
  }
  return hit;
}

/**
 * The snapshot's test files (not among `have`) that mention one of `names`; for Go, also the other
 * test files of their packages' directories (a helper a graded test calls, go-humanize's
 * `testList.validate`, is compiled with it from a file that names no graded test).
 */
async function repoTestFiles(
  format: ResultFormat,
  workspace: string,
  ids: readonly string[],
  names: readonly string[],
  have: ReadonlySet<string>,
): Promise<InstalledFile[]> {
  const paths = (await candidatePaths(format, workspace, ids)).filter(
    (p) => isTestFile(format, p) && !have.has(p),
  );
  const read = new Map<string, InstalledFile>();
  for (const path of paths.sort()) {
    const f = await regularFile(workspace, path);
    if (f && f.content.length <= MAX_BYTES) read.set(path, { path, ...f });
  }
  const named = [...read.values()].filter((f) => names.some((n) => f.content.toString("utf8").includes(n)));
  if (format !== "gotest") return named;
  const dirs = new Set([...have, ...named.map((f) => f.path)].map((p) => posix.dirname(p)));
  return [...read.values()].filter((f) => named.includes(f) || dirs.has(posix.dirname(f.path)));
}

/** The name a graded id's test is defined under (the last part of its id). Pure. */
export function definedName(format: ResultFormat, id: string): string {
  if (format === "pytest" || format === "libtest") return id.slice(id.lastIndexOf("::") + 2);
  if (format === "gotest") return id.split("/")[0]!;
  return id;
}

/** Why a graded test of an as-written file (externalize/run.ts asWrittenFiles) has no guard. */
const AS_WRITTEN =
  "its file stays as written: when the task was validated, a test of it computed another value once the file was rewritten (it reads its own file), recorded in tests.run.opaque";

export async function guardHidden(
  suite: {
    readonly results: ResultFormat;
    readonly failToPass: readonly string[];
    readonly passToPass: readonly string[];
    /** Graded ids left to decoys as recorded at validation (externalize/opaque.ts). */
    readonly opaque?: Readonly<Record<string, string>>;
    /** Decoy sites gold passed at validation, per graded id (decoys/site-key.ts): never drawn. */
    readonly decoyInert?: InertSites;
  },
  installed: readonly InstalledFile[],
  snapshotWorkspace: string,
  rand: (n: number) => number = (n) => randomInt(n),
  signal?: AbortSignal,
  /** Externalize what can be (default); false: decoys only, as before issue 42 (a red-team baseline). */
  externalize = true,
  /** The task's prompt: decoy values are balanced against it too (decoys/readable.ts). */
  prompt?: string,
  /** `validate`'s probe of gold: one decoy at every site a draw may pick (decoys/site-key.ts). */
  probe = false,
): Promise<{ files: InstalledFile[]; plan: DecoyPlan; report: GuardReport; external: ExternalSite[] }> {
  const graded = [...suite.failToPass, ...suite.passToPass];
  const have = new Set(installed.map((f) => f.path));
  const extra = await repoTestFiles(
    suite.results,
    snapshotWorkspace,
    graded,
    graded.map((id) => definedName(suite.results, id)),
    have,
  );
  // a file gold's validation showed a test of reads as rewritten stays as written (externalize/run.ts)
  const asWritten = suite.results === "pytest" ? asWrittenFiles(suite.opaque) : new Set<string>();
  const inFile = (id: string) => asWritten.has(id.slice(0, id.indexOf("::")));
  const found = [...installed, ...extra].filter((f) => !asWritten.has(f.path));
  const kept = installed.filter((f) => asWritten.has(f.path));
  const guardable = graded.filter((id) => !inFile(id));
  // expected values leave the files first (scoring/externalize); decoys guard only what stayed
  const ext = externalize
    ? await externalizeGraded(suite.results, found, guardable, signal, suite.opaque)
    : decoysOnly(found, guardable, "externalization switched off for this scoring");
  const all = found.map((f, i) => ({ ...f, content: ext.files[i]!.content }));
  const readable = ext.decoyed.length
    ? await readableTexts(
        snapshotWorkspace,
        found.map((f) => f.path),
        prompt,
      )
    : [];
  const g = guardFiles(suite.results, all, ext.decoyed, rand, readable, { inert: suite.decoyInert, probe });
  // only files that changed are bound (a repository file no graded test lives in stays as it is)
  const files = [
    ...all.flatMap((f, i) =>
      have.has(f.path) || !g.files[i]!.content.equals(found[i]!.content)
        ? [{ ...f, content: g.files[i]!.content }]
        : [],
    ),
    ...kept,
  ];
  const report: GuardReport = {
    guarded: g.report.guarded,
    unguarded: [
      ...g.report.unguarded.map((u) =>
        ext.why[u.id] ? { ...u, reason: `${u.reason}; not externalized: ${ext.why[u.id]}` } : u,
      ),
      ...graded.filter(inFile).map((id) => ({ id, reason: AS_WRITTEN })),
    ],
    externalized: ext.externalized,
    ...(ext.comparedOutside.length ? { comparedOutside: ext.comparedOutside } : {}),
  };
  // cases a rewritten file ids afresh (a parametrized expected side) report under their new ids
  const plan = ext.runIds ? { ...g.plan, runIds: { ...ext.runIds, ...g.plan.runIds } } : g.plan;
  return { files, plan, report, external: ext.sites };
}
