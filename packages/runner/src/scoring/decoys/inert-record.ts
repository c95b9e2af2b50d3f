import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DecoyInertSites } from "../../tasks/task-spec.js";

/**
 * `validate`: the decoy sites gold passed at in its probe run (decoys/site-key.ts), as gold's score
 * reported them, merged into the task's `task.json` (`tests.run.decoyInert`). Only gold's (the
 * reference patch's) probe score is ever read, and only graded ids of a suite task are taken: code
 * under test never writes the record, and a record only ever removes decoys that gold passes.
 */

/** `had` with `picked` merged in (sites per id, sorted, unique), and how many sites are new. Pure. */
function merged(
  had: Readonly<Record<string, readonly string[]>>,
  picked: Readonly<Record<string, readonly string[]>>,
): { inert: Record<string, string[]>; added: number } {
  const inert: Record<string, string[]> = Object.fromEntries(
    Object.entries(had).map(([k, v]) => [k, [...v]]),
  );
  let added = 0;
  for (const [id, sites] of Object.entries(picked)) {
    const had = new Set(inert[id] ?? []);
    const now = new Set([...had, ...sites]);
    added += now.size - had.size;
    inert[id] = [...now].sort();
  }
  return { inert, added };
}

/** The task spec with `picked` merged into `tests.run.decoyInert`, and how many sites are new; or why not. Pure. */
export function withDecoyInert(
  spec: unknown,
  picked: Readonly<Record<string, readonly string[]>>,
): { spec: unknown; added: number } | { error: string } {
  const run = (spec as { tests?: { run?: Record<string, unknown> } } | null)?.tests?.run;
  if (run?.kind !== "suite")
    return {
      error: "its hidden tests are not a suite (tests.run.kind), the only kind with parametrized decoys",
    };
  const graded = new Set([...asIds(run.failToPass), ...asIds(run.passToPass)]);
  const stray = Object.keys(picked).filter((id) => !graded.has(id));
  if (stray.length) return { error: `${stray.join(", ")} is no graded test of the task` };
  const valid = DecoyInertSites.safeParse(picked);
  if (!valid.success) return { error: `a site is not \`line:column\`: ${valid.error.issues[0]?.message}` };
  const had = DecoyInertSites.safeParse(run.decoyInert ?? {});
  if (!had.success)
    return {
      error: `its tests.run.decoyInert is malformed (${had.error.issues[0]?.message}): fix or delete it`,
    };
  const { inert, added } = merged(had.data, valid.data);
  const tests = (spec as { tests: Record<string, unknown> }).tests;
  return { spec: { ...(spec as object), tests: { ...tests, run: { ...run, decoyInert: inert } } }, added };
}

const asIds = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

/** Merges `picked` into `<taskDir>/task.json` (written whole, then renamed); how many sites are new. */
export async function recordDecoyInert(
  taskDir: string,
  picked: Readonly<Record<string, readonly string[]>>,
): Promise<number> {
  const file = join(taskDir, "task.json");
  let spec: unknown;
  try {
    spec = JSON.parse(await readFile(file, "utf8"));
  } catch (e) {
    throw new Error(`cannot record gold's inert decoy sites in ${file}: ${(e as Error).message}`);
  }
  const next = withDecoyInert(spec, picked);
  if ("error" in next) throw new Error(`cannot record gold's inert decoy sites in ${file}: ${next.error}`);
  if (!next.added) return 0;
  const tmp = `${file}.decoy-inert-${process.pid}`;
  await writeFile(tmp, `${JSON.stringify(next.spec, null, 2)}\n`);
  await rename(tmp, file);
  return next.added;
}
