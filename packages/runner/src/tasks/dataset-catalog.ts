import { mkdir } from "node:fs/promises";
import { FlakegymError } from "../errors.js";
import { formatIntakeError, intakeKind, loadIntake } from "./intake.js";
import { writeTaskFolder } from "./task-dir.js";

/**
 * `rollout --dataset` over inputs with hidden tests (SWE-bench-family rows, Harbor task dirs): the
 * accepted tasks (the first `limit`) are written as a catalog beside the run directory, so the run
 * is a catalog run (reward = hidden tests, `gold` has a reference) and `--resume` finds them again.
 * Returns undefined for a swe-agent file, which rollout reads as dataset rows.
 */
export async function datasetAsCatalog(
  path: string,
  catalogDir: string,
  o: { limit?: number; signal?: AbortSignal; note?: (line: string) => void },
): Promise<{ catalog: string; tasks: string[] } | undefined> {
  if ((await intakeKind(path, o.signal)) === "swe-agent") return undefined;
  const d = await loadIntake(path, o.signal ? { signal: o.signal } : {});
  for (const e of d.rejected) o.note?.(`rejected (skipped): ${formatIntakeError(d.summary.kind, e)}`);
  const picked = d.tasks.slice(0, o.limit ?? d.tasks.length);
  if (picked.length === 0) {
    throw new FlakegymError(
      "E_DATASET",
      `${path}: no usable task (${d.summary.rows} read, ${d.rejected.length} rejected)`,
      {
        hint: `see why with: flakegym tasks check --dataset ${path}`,
      },
    );
  }
  await mkdir(catalogDir, { recursive: true });
  for (const t of picked) {
    await writeTaskFolder(catalogDir, t, { replace: true });
    for (const n of t.notes ?? []) o.note?.(`note: ${t.spec.id}: ${n}`);
  }
  o.note?.(`${picked.length} task(s) with hidden tests from ${path} → ${catalogDir}`);
  return { catalog: catalogDir, tasks: picked.map((t) => t.spec.id) };
}
