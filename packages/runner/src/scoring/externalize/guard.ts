import type { ResultFormat } from "../../tasks/task-spec.js";
import type { GuardFile } from "../decoys/guard.js";
import { externalizeC } from "./c.js";
import type { ExternalSite } from "./canon.js";
import { externalizeGo } from "./go.js";
import { externalizeNode } from "./node.js";
import { keptForOpaque } from "./opaque.js";
import { type Externalized, externalizePython } from "./rewrite.js";
import { externalizeRust } from "./rust.js";
import { baseOf, siteRunsIn } from "./verdict.js";

/**
 * Which graded tests of a suite are externalized (their expected values kept on the host) and
 * which are left to decoys, for every result format: pytest suites go through the host's Python
 * rewriter (externalize/rewrite.ts), go test suites through its Go one (externalize/go.ts), node
 * --test suites through externalize/node.ts, libtest integration tests through externalize/rust.ts,
 * check-h suites through externalize/c.ts; other
 * formats are not externalized yet and keep decoys, said so per test. A graded test is externalized when at least one of its assertions left the file: its
 * verdict then needs that assertion's value, which only a correct solution computes.
 */
export interface ExternalizedGraded<F extends GuardFile> {
  readonly files: F[];
  readonly sites: ExternalSite[];
  /** Graded ids with an assertion whose expected value left the files. */
  readonly externalized: string[];
  /** Graded ids whose assertions are all compared outside, their expected sides computed by the test (pairs). */
  readonly comparedOutside: string[];
  /** Graded ids left to decoys. */
  readonly decoyed: string[];
  /** Why each decoyed id was not externalized. */
  readonly why: Readonly<Record<string, string>>;
  /** Graded id → its id in the run, where the rewritten files id its cases afresh. */
  readonly runIds?: Readonly<Record<string, string>>;
}

/** Everything left to decoys, for `why`. Pure. */
export const decoysOnly = <F extends GuardFile>(
  files: readonly F[],
  graded: readonly string[],
  why: string,
): ExternalizedGraded<F> => ({
  files: [...files],
  sites: [],
  externalized: [],
  comparedOutside: [],
  decoyed: [...graded],
  why: Object.fromEntries(graded.map((id) => [id, why])),
});

/** Why graded `id` has no externalized site that runs in it, from the rewriter's answer. Pure. */
function whyDecoyed(format: ResultFormat, ext: Externalized, id: string): string {
  const t = ext.tests[baseOf(id)];
  if (!t)
    return format === "gotest"
      ? "its id names no top-level test function of a hidden file (a subtest, a fuzz seed)"
      : format === "tap"
        ? "its name is no top-level test(name, fn) or it(name, fn) with a plain string name and a callback written in place"
        : "its test function was not found at the top level or in a class of its file";
  if (ext.sites.some((s) => s.test === baseOf(id)))
    return "its assertions sit on the side of an if its parameters do not take";
  const reasons = [...new Set(t.kept)];
  return reasons.length
    ? `no assertion with a literal expected value (${reasons.join("; ")})`
    : "no assertion found in its body";
}

/** The host rewriter of each result format that has one. */
const REWRITERS: Partial<
  Record<
    ResultFormat,
    (
      files: readonly GuardFile[],
      graded: readonly string[],
      signal?: AbortSignal,
      kept?: readonly string[],
    ) => Promise<Externalized>
  >
> = {
  pytest: (files, graded, signal, kept) => externalizePython(files, graded, signal, false, kept),
  // SymPy's bin/test grades bare names: each names the one hidden top-level function of that name;
  // a SymPy value renders as an int (an Integer) or an object gold's validation records
  sympy: (files, graded, signal, kept) => externalizePython(files, graded, signal, true, kept),
  gotest: externalizeGo,
  tap: externalizeNode,
  libtest: externalizeRust,
  "check-h": externalizeC,
};

/** Why a test recorded in the task's `opaque` is left to decoys. */
const whyOpaque = (what: string) =>
  `when the task was validated, gold emitted ${what} at a literal assertion, which the host cannot compare (recorded in tests.run.opaque)`;

export async function externalizeGraded<F extends GuardFile>(
  format: ResultFormat,
  files: readonly F[],
  graded: readonly string[],
  signal?: AbortSignal,
  /** The task's recorded opaque tests (externalize/opaque.ts): their functions stay as written. */
  opaque?: Readonly<Record<string, string>>,
): Promise<ExternalizedGraded<F>> {
  const rewriter = REWRITERS[format];
  if (!rewriter)
    return decoysOnly(files, graded, `${format} assertions are not externalized yet (decoys only)`);
  const kept = keptForOpaque(graded, opaque);
  const ext = await rewriter(
    files,
    graded.filter((id) => !kept.has(id)),
    signal,
    [...kept],
  ).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
  if (ext instanceof Error) return decoysOnly(files, graded, ext.message);
  // a case is judged by the sites that run in it (not those on the side of an if it skips)
  const running = (id: string) =>
    ext.sites.filter((s) => s.test === baseOf(id) && siteRunsIn(s, ext.runIds?.[id] ?? id) !== "skips");
  const externalized = graded.filter((id) => running(id).some((s) => !s.pair));
  const comparedOutside = graded.filter((id) => running(id).length > 0 && running(id).every((s) => s.pair));
  const decoyed = graded.filter((id) => running(id).length === 0);
  const recorded = (id: string) =>
    opaque?.[id] ?? Object.entries(opaque ?? {}).find(([k]) => baseOf(k) === baseOf(id))![1];
  const why = Object.fromEntries(
    decoyed.map((id) => [id, kept.has(id) ? whyOpaque(recorded(id)) : whyDecoyed(format, ext, id)]),
  );
  return {
    files: files.map((f, i) => ({ ...f, content: ext.files[i]!.content })),
    sites: ext.sites,
    externalized,
    comparedOutside,
    decoyed,
    why,
    ...(ext.runIds ? { runIds: ext.runIds } : {}),
  };
}
