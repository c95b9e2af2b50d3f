import { match } from "ts-pattern";
import type { RowError } from "../tasks/dataset-row.js";
import type { IntakeTask } from "../tasks/swebench.js";
import { choosePython, minorOf, type PythonCandidate, type PythonChoice } from "./python-choice.js";
import { candidatesFor, type PythonOptions, pythonOptionsOf } from "./python-providers.js";

/**
 * Which Python each accepted python row wants (its facts' `python_version`) and which provider
 * would serve it on this machine, as `tasks check` reports it: the interpreter the snapshot build
 * would take (snapshots/python-choice.ts's chain), the allowed mismatch, or a refusal naming what
 * to do. A refused row is not buildable here: it is counted among the rejections (field `python`).
 */

/** One row's interpreter, as found for it. */
export interface RowPython {
  readonly row: number;
  readonly id: string;
  readonly choice: PythonChoice;
}

/** The line `tasks check` prints for a row's interpreter. Pure. */
export function rowPythonLine(r: RowPython): string {
  const head = `python: row ${r.row} [${r.id}]: wants ${r.choice.wanted}`;
  return match(r.choice)
    .with(
      { kind: "match" },
      (c) =>
        `${head}, served by ${c.candidate.provider}: ${c.candidate.version} (${c.candidate.interpreter})`,
    )
    .with(
      { kind: "mismatch-allowed" },
      () => `${head}, none here: runs on the sandbox's python3 (--allow-python-mismatch)`,
    )
    .with({ kind: "refused" }, () => `${head}: none here (see the rejection)`)
    .exhaustive();
}

/** The rejection of a row whose Python is refused, or undefined. Pure. */
export function rowPythonRejection(file: string, r: RowPython): RowError | undefined {
  if (r.choice.kind !== "refused") return undefined;
  return { file, row: r.row, id: r.id, field: "python", reason: `${r.choice.reason}: ${r.choice.hint}` };
}

/** The Python a task wants (`X.Y`), when it is a python task that names one. Pure. */
export function wantedPythonOf(t: IntakeTask): string | undefined {
  const v = t.spec.metadata?.python_version;
  return t.spec.profile === "python" && typeof v === "string" ? (minorOf(v) ?? v) : undefined;
}

/** Each python row's interpreter, looking each wanted version up once. */
export async function rowPythonsOf(
  tasks: readonly IntakeTask[],
  o: PythonOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RowPython[]> {
  const opts = pythonOptionsOf(o, env);
  const byMinor = new Map<string, PythonCandidate[]>();
  const out: RowPython[] = [];
  for (const t of tasks) {
    const minor = wantedPythonOf(t);
    if (minor === undefined) continue;
    if (!byMinor.has(minor)) byMinor.set(minor, await candidatesFor(minor, opts, env));
    const choice = choosePython(t.spec.id, minor, byMinor.get(minor)!, opts.allowMismatch ?? false);
    out.push({ row: t.source.row, id: t.spec.id, choice });
  }
  return out;
}

/** A row's interpreter as `tasks check --json` lists it. Pure. */
export function pythonJsonOf(r: RowPython): Record<string, unknown> {
  const base = { row: r.row, id: r.id, wanted: r.choice.wanted, kind: r.choice.kind };
  return match(r.choice)
    .with({ kind: "match" }, (c) => ({
      ...base,
      provider: c.candidate.provider,
      version: c.candidate.version,
      interpreter: c.candidate.interpreter,
    }))
    .with({ kind: "mismatch-allowed" }, (c) => ({ ...base, note: c.note }))
    .with({ kind: "refused" }, (c) => ({ ...base, reason: c.reason, hint: c.hint }))
    .exhaustive();
}

/**
 * An intake's rejections and totals with the rows whose Python is refused moved from accepted to
 * rejected (in row order), and which rows those are. Pure.
 */
export function withPythonRefusals<S extends { file: string; accepted: number; rejected: number }>(
  d: { readonly summary: S; readonly rejected: readonly RowError[] },
  pythons: readonly RowPython[],
): { rejected: RowError[]; summary: S; refusedRows: Set<number> } {
  const refused = pythons.flatMap((r) => rowPythonRejection(d.summary.file, r) ?? []);
  const rejected = [...d.rejected, ...refused].sort((a, b) => a.row - b.row);
  return {
    rejected,
    summary: { ...d.summary, accepted: d.summary.accepted - refused.length, rejected: rejected.length },
    refusedRows: new Set(refused.map((e) => e.row)),
  };
}
