import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { z } from "zod";
import type { GuardFile } from "../decoys/guard.js";
import { ExternalSite } from "./canon.js";
import { PYTHON_EMITTER } from "./python-emitter.js";
import { PYTHON_REWRITER } from "./python-source.js";

/**
 * Externalizes the graded assertions of a pytest suite's hidden test files (issue 42): each
 * `assert got == <literals>` (and `!=`, `in`, `not in`, `is None`, `pytest.approx`, unittest's
 * assertEqual family, assertAlmostEqual, assertIn, assertIsNone, assertCountEqual, and
 * `pytest.raises` / assertRaises / assertRaisesRegex context managers) in a graded test becomes
 * `_fg_emit(<site>, got)`; the expected value leaves the file and stays on the host as an
 * ExternalSite. The rewriting is Python's own parser run on the host over trusted files (the
 * task's hidden tests and the pristine snapshot's), never the workspace. An assertion whose
 * expected side is computed (by code under test or anything but literals) stays as it is: decoys
 * guard it where they can (docs/reference/tasks.md "Externalized assertions").
 */

/** Per graded test (its id without parameters): sites externalized, and why the rest stayed. */
export const TestCoverage = z.object({ sites: z.number().int(), kept: z.array(z.string()) }).strict();

/** What a host rewriter prints (this one and go.ts's). */
export const RewriteOutput = z
  .object({
    files: z.array(z.object({ path: z.string(), text: z.string().nullable() }).strict()),
    sites: z.array(ExternalSite),
    tests: z.record(z.string(), TestCoverage),
    /** Graded ids whose cases the rewritten file ids afresh (a parametrized expected side): their ids in the run. */
    runIds: z.record(z.string(), z.string()).optional(),
  })
  .strict();

export interface Externalized {
  /** The files, rewritten where a graded test had an externalized assertion. */
  readonly files: GuardFile[];
  readonly sites: ExternalSite[];
  /** Per graded test base id: how many sites left the file, and why the others stayed. */
  readonly tests: Readonly<Record<string, z.infer<typeof TestCoverage>>>;
  /** Graded id → its id in the run, where the rewritten file ids its cases afresh. */
  readonly runIds?: Readonly<Record<string, string>>;
}

/** Deadline of the host rewriter (it parses a few files; a SWE-bench test file is < 1 MiB). */
const REWRITE_MS = 60_000;

/** The Python the rewriter runs under: `$FLAKEGYM_HOST_PYTHON`, else `python3` on PATH. */
const hostPython = () => process.env.FLAKEGYM_HOST_PYTHON || "python3";

/**
 * Rewrites `files` (pytest test files) so the graded tests' literal assertions are emitted, not
 * compared. Throws with the reason when the host's Python cannot run the rewriter (the caller
 * then keeps decoys for every test and reports why).
 */
export async function externalizePython(
  files: readonly GuardFile[],
  graded: readonly string[],
  signal?: AbortSignal,
  /**
   * The ids are bare function names (SymPy's `bin/test`): each names the one top-level test
   * function of that name in the files, and its sites emit under that name (no pytest node id).
   */
  bare = false,
  /** Graded ids kept as written (recorded opaque): a helper one of them calls stays as written. */
  kept: readonly string[] = [],
): Promise<Externalized> {
  const py = files.filter((f) => f.path.endsWith(".py") && !f.content.includes(0));
  using deadline = createDeadline({
    signals: [signal],
    timeout: { limit: "the host's assertion rewriter (scoring/externalize)", ms: REWRITE_MS },
  });
  const input = JSON.stringify({
    files: py.map((f) => ({ path: f.path, text: f.content.toString("utf8") })),
    graded,
    bare,
    kept,
  });
  const r = await execa(hostPython(), ["-I", "-c", PYTHON_REWRITER, PYTHON_EMITTER], {
    input,
    reject: false,
    cancelSignal: deadline.signal,
    env: { PATH: process.env.PATH ?? "", PYTHONDONTWRITEBYTECODE: "1" },
    extendEnv: false,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.exitCode !== 0)
    throw new Error(
      `the host's ${hostPython()} could not rewrite the hidden tests (exit ${r.exitCode ?? "none"}${r.isCanceled ? ", deadline" : ""}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}; set FLAKEGYM_HOST_PYTHON to a Python 3.8+`,
    );
  return externalizedOf(files, r.stdout);
}

/** A host rewriter's answer (RewriteOutput JSON) applied to the files it was given. */
export function externalizedOf(files: readonly GuardFile[], stdout: string): Externalized {
  const out = RewriteOutput.parse(JSON.parse(stdout));
  const texts = new Map(out.files.map((f) => [f.path, f.text]));
  return {
    files: files.map((f) => {
      const t = texts.get(f.path);
      return t == null ? f : { ...f, content: Buffer.from(t) };
    }),
    sites: out.sites,
    tests: out.tests,
    ...(out.runIds && Object.keys(out.runIds).length ? { runIds: out.runIds } : {}),
  };
}
