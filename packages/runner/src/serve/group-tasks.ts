import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { isAbsolute, join, relative, resolve } from "node:path";
import { compileScenario } from "../eval/compile-scenario.js";
import { BUILTIN_SCENARIOS_DIR, builtinScenarioIds, loadScenario, type Scenario } from "../eval/scenario.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../tasks/catalog.js";
import { type IntakeTask, isSwebenchRow, parseSwebenchRow } from "../tasks/swebench.js";
import { writeTaskFolder } from "../tasks/task-dir.js";
import type { GroupRequest, RowProblem } from "./schema.js";

/**
 * What a group request runs, as catalog tasks: a catalog task as it is; dataset rows through the
 * importer `rollout --dataset` and `tasks import` use (parseSwebenchRow, writeTaskFolder); a
 * scenario through eval's compiler (compileScenario). Rows and scenarios are written as a catalog
 * in the group's directory, so the group is a catalog run (reward = hidden tests) and a restarted
 * server writes the same catalog again from the stored request.
 */

/** The catalog and the task ids a group's rollout runs. */
export interface GroupTasks {
  readonly catalog?: string;
  readonly tasks: readonly string[];
}

/** Where a request's rows say they come from (the "file" of their row errors). */
export const ROWS_SOURCE = "request.rows";

/**
 * Why a parsed row's repository may not be used: a local repository (a path or file:// URL) is
 * only taken from inside the server's `--repos-dir`. Pure.
 */
export function localRepoProblem(task: IntakeTask, reposDir: string | undefined): string | undefined {
  const src = task.spec.source;
  if (src.kind !== "git" || task.spec.network !== "none") return undefined;
  const path = src.url.startsWith("file://") ? new URL(src.url).pathname : src.url;
  if (reposDir === undefined) {
    return "names a repository on the server, which a request may only do when the server runs with --repos-dir (paths relative to it); or name a remote repository";
  }
  const rel = relative(reposDir, path);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
    return "names a repository outside the server's --repos-dir: give a path relative to it";
  }
  return undefined;
}

/**
 * The request's rows as tasks, or every row that is wrong (row, field, reason). Relative local
 * repository paths are resolved against `reposDir`. Pure.
 */
export function parseRows(
  rows: readonly unknown[],
  reposDir: string | undefined,
): { ok: true; tasks: IntakeTask[] } | { ok: false; problems: RowProblem[] } {
  // relative paths resolve against the "file"'s directory: reposDir (a path nothing matches without one)
  const file = join(reposDir ?? resolve("/", "no-repos-dir"), ROWS_SOURCE);
  const tasks: IntakeTask[] = [];
  const problems: RowProblem[] = [];
  const seen = new Map<string, number>();
  for (const [i, raw] of rows.entries()) {
    const row = i + 1;
    if (!isSwebenchRow(raw)) {
      problems.push({
        row,
        field: "instance_id",
        reason:
          "missing: serve takes SWE-bench-style rows (their hidden tests are the reward); rows without tests (swe-agent) need rollout --dataset with --build-cmd/--lint-cmd/--judge",
      });
      continue;
    }
    const r = parseSwebenchRow(raw, { file, row });
    if (!r.ok) {
      const { field, reason, id } = r.error;
      problems.push({ row, field, reason, ...(id !== undefined ? { id } : {}) });
      continue;
    }
    const id = r.task.spec.id;
    const named = String((raw as { instance_id: unknown }).instance_id);
    const repo = localRepoProblem(r.task, reposDir);
    const first = seen.get(id);
    if (repo) problems.push({ row, field: "repo", reason: repo, id: named });
    else if (first !== undefined)
      problems.push({
        row,
        field: "instance_id",
        reason: `task id '${id}' is row ${first}'s too`,
        id: named,
      });
    else {
      seen.set(id, row);
      tasks.push(r.task);
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tasks };
}

/** An inline scenario's id: its content's hash (the same scenario, the same task id). Pure. */
export function inlineScenarioId(spec: unknown): string {
  return `inline-${createHash("sha256").update(JSON.stringify(spec)).digest("hex").slice(0, 12)}`;
}

/** A request's problem the server answers 400 to, before anything is written or started. */
export class GroupTaskError extends Error {
  constructor(
    readonly field: string,
    message: string,
    readonly rows?: readonly RowProblem[],
  ) {
    super(message);
  }
}

/** The request's scenario, loaded (a built-in id, or the inline spec with an empty workspace). */
async function scenarioOf(s: NonNullable<GroupRequest["scenario"]>): Promise<Scenario> {
  if (typeof s !== "string") return { id: inlineScenarioId(s), dir: BUILTIN_SCENARIOS_DIR, spec: s };
  const known = await builtinScenarioIds();
  if (!known.includes(s)) {
    throw new GroupTaskError(
      "scenario",
      `'${s}' is not a built-in scenario (known: ${known.join(", ")}); send other scenarios inline`,
    );
  }
  return await loadScenario(join(BUILTIN_SCENARIOS_DIR, s));
}

/** Checks what a request runs without writing anything; throws GroupTaskError naming the field. */
export async function checkGroupTasks(
  req: GroupRequest,
  o: { catalog?: string; reposDir?: string },
): Promise<void> {
  if (req.task !== undefined) {
    await loadTask(req.task, o.catalog ?? BUILTIN_CATALOG_DIR).catch((err: Error) => {
      throw new GroupTaskError("task", err.message);
    });
  } else if (req.rows !== undefined) {
    const r = parseRows(req.rows, o.reposDir);
    if (!r.ok) {
      throw new GroupTaskError(
        "rows",
        `${r.problems.length} of ${req.rows.length} row(s) rejected, nothing started: ${r.problems
          .slice(0, 3)
          .map((p) => `row ${p.row} field '${p.field}': ${p.reason}`)
          .join("; ")}`,
        r.problems,
      );
    }
  } else if (req.scenario !== undefined) await scenarioOf(req.scenario);
}

/** Writes the group's catalog (rows, scenario) under `dir` and names its tasks. Idempotent. */
export async function prepareGroupTasks(
  req: GroupRequest,
  dir: string,
  o: { catalog?: string; reposDir?: string },
): Promise<GroupTasks> {
  if (req.task !== undefined) return { ...(o.catalog ? { catalog: o.catalog } : {}), tasks: [req.task] };
  await mkdir(dir, { recursive: true });
  if (req.rows !== undefined) {
    const r = parseRows(req.rows, o.reposDir);
    if (!r.ok) throw new GroupTaskError("rows", "rows rejected", r.problems);
    for (const t of r.tasks) await writeTaskFolder(dir, t, { replace: true });
    return { catalog: dir, tasks: r.tasks.map((t) => t.spec.id) };
  }
  const s = await scenarioOf(req.scenario!);
  return { catalog: dir, tasks: [await compileScenario(s, dir)] };
}
