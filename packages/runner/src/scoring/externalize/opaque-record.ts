import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * `validate --record-opaque`: gold's opaque tests (externalize/opaque.ts), as its score reported
 * them, written into the task's `task.json` beside its hidden scoring data (`tests.run.opaque`).
 * Only gold's (the reference patch's) score is ever read, and only graded ids of a suite task are
 * taken: code under test never writes the record.
 */

/** The task spec with `picked` merged into `tests.run.opaque`, and the ids added; or why not. Pure. */
export function withOpaque(
  spec: unknown,
  picked: Readonly<Record<string, string>>,
): { spec: unknown; added: string[] } | { error: string } {
  const run = (spec as { tests?: { run?: Record<string, unknown> } } | null)?.tests?.run;
  if (run?.kind !== "suite")
    return { error: "its hidden tests are not a suite (tests.run.kind), the only kind that is externalized" };
  const graded = new Set([...asIds(run.failToPass), ...asIds(run.passToPass)]);
  const stray = Object.keys(picked).filter((id) => !graded.has(id));
  if (stray.length) return { error: `${stray.join(", ")} is no graded test of the task` };
  const had = (run.opaque ?? {}) as Record<string, string>;
  const added = Object.keys(picked).filter((id) => had[id] === undefined);
  const opaque = { ...had, ...picked };
  const tests = (spec as { tests: Record<string, unknown> }).tests;
  return { spec: { ...(spec as object), tests: { ...tests, run: { ...run, opaque } } }, added };
}

const asIds = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

/** Merges `picked` into `<taskDir>/task.json` (written whole, then renamed); the ids added. */
export async function recordOpaque(
  taskDir: string,
  picked: Readonly<Record<string, string>>,
): Promise<string[]> {
  const file = join(taskDir, "task.json");
  let spec: unknown;
  try {
    spec = JSON.parse(await readFile(file, "utf8"));
  } catch (e) {
    throw new Error(`cannot record gold's opaque tests in ${file}: ${(e as Error).message}`);
  }
  const next = withOpaque(spec, picked);
  if ("error" in next) throw new Error(`cannot record gold's opaque tests in ${file}: ${next.error}`);
  if (!next.added.length) return [];
  const tmp = `${file}.opaque-${process.pid}`;
  await writeFile(tmp, `${JSON.stringify(next.spec, null, 2)}\n`);
  await rename(tmp, file);
  return next.added;
}
