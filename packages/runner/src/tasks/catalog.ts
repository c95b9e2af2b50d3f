import { access, readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { formatIssuePath, leafIssues } from "../text/zod-issues.js";
import type { TaskProfile } from "./task-profile.js";
import { TaskSpec } from "./task-spec.js";

/** The built-in catalog: one directory per task holding a `task.json`. */
export const BUILTIN_CATALOG_DIR = fileURLToPath(new URL("../../catalog/", import.meta.url));

/** The fields `tasks list` shows. */
export const CatalogEntry = z.object({
  id: z.string().min(1).describe("task id, equal to its directory name"),
  summary: z.string().describe("one line describing the task"),
  profile: z.string().describe("toolchain profile id"),
  network: z.enum(["none", "required"]).describe("whether the task needs network to build"),
  difficulty: z.string().optional().describe("easy, medium or hard (absent: not rated)"),
});
export type CatalogEntry = z.infer<typeof CatalogEntry>;

/** A catalog task with the absolute paths of the files its spec names. */
export interface LoadedTask {
  readonly spec: TaskSpec;
  /** Absolute path of the task's folder. */
  readonly dir: string;
  readonly paths: {
    readonly solution: string;
    readonly testsPatch?: string;
    readonly testsDir?: string;
    readonly sourceDir?: string;
  };
}

function describeIssue(file: string, err: z.ZodError): string {
  const issue = leafIssues(err.issues[0]!)[0]!;
  return `${file}: field '${formatIssuePath(issue.path)}': ${issue.message}`;
}

/** Reads and validates `<dir>/task.json`; checks that every file it names exists. */
export async function loadTaskDir(dir: string): Promise<LoadedTask> {
  const abs = resolve(dir);
  const file = join(abs, "task.json");
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, "utf8"));
  } catch (cause) {
    throw new FlakegymError("E_CATALOG", `cannot read ${file}: ${(cause as Error).message}`, { cause });
  }
  const parsed = TaskSpec.safeParse(raw);
  if (!parsed.success) throw new FlakegymError("E_CATALOG", describeIssue(file, parsed.error));
  const spec = parsed.data;
  const name = abs.split("/").pop();
  if (name !== spec.id) {
    throw new FlakegymError(
      "E_CATALOG",
      `${file}: field 'id': '${spec.id}' differs from its directory name '${name}'`,
    );
  }
  const paths = {
    solution: join(abs, spec.solution),
    ...(spec.tests.patch ? { testsPatch: join(abs, spec.tests.patch) } : {}),
    ...(spec.tests.dir ? { testsDir: join(abs, spec.tests.dir) } : {}),
    ...(spec.source.kind === "local" ? { sourceDir: join(abs, spec.source.dir) } : {}),
  };
  const named: [string, string | undefined][] = [
    ["solution", paths.solution],
    ["tests.patch", paths.testsPatch],
    ["tests.dir", paths.testsDir],
    ["source.dir", paths.sourceDir],
    ...(spec.mounts ?? []).map((m, i): [string, string] => [`mounts[${i}].dir`, join(abs, m.dir)]),
  ];
  for (const [field, p] of named) {
    if (p === undefined) continue;
    try {
      await access(p);
    } catch {
      throw new FlakegymError("E_CATALOG", `${file}: field '${field}': ${p} does not exist`);
    }
  }
  return { spec, dir: abs, paths };
}

/** The catalog's subdirectory of eval scenarios, which is not a task. */
export const SCENARIOS_SUBDIR = "scenarios";

async function taskDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return (
      entries
        // scenarios/ holds eval scenarios (packages/runner/src/eval), not tasks
        .filter((d) => d.isDirectory() && d.name !== SCENARIOS_SUBDIR)
        .map((d) => d.name)
        .sort()
    );
  } catch (cause) {
    throw new FlakegymError("E_CATALOG", `cannot read task catalog directory ${dir}`, {
      cause,
      hint: "pass --catalog <dir> pointing at a directory of task folders",
    });
  }
}

/** Every task in a catalog, validated. */
export async function loadCatalog(dir: string = BUILTIN_CATALOG_DIR): Promise<LoadedTask[]> {
  const out: LoadedTask[] = [];
  for (const name of await taskDirs(dir)) out.push(await loadTaskDir(join(dir, name)));
  return out;
}

export async function listCatalog(dir: string = BUILTIN_CATALOG_DIR): Promise<CatalogEntry[]> {
  return (await loadCatalog(dir)).map(({ spec }) => ({
    id: spec.id,
    summary: spec.summary,
    profile: spec.profile,
    network: spec.network,
    ...(spec.difficulty ? { difficulty: spec.difficulty } : {}),
  }));
}

/** Loads one catalog task by id; the error lists the ids that exist. */
export async function loadTask(id: string, dir: string = BUILTIN_CATALOG_DIR): Promise<LoadedTask> {
  const names = await taskDirs(dir);
  if (!names.includes(id)) {
    throw new FlakegymError("E_TASK_NOT_FOUND", `no task '${id}' in the catalog ${dir}`, {
      hint: `known tasks: ${names.join(", ") || "(none)"} (see flakegym tasks list)`,
    });
  }
  return await loadTaskDir(join(dir, id));
}

/** The TaskProfile view of a catalog task (what rollouts and reports consume). */
export function taskProfileOf(task: LoadedTask): TaskProfile {
  const src = task.spec.source;
  return {
    id: task.spec.id,
    repo: src.kind === "local" ? task.paths.sourceDir! : src.url,
    repoKind: src.kind === "local" ? "local" : "url",
    repoUrl: src.kind === "local" ? task.paths.sourceDir! : src.url,
    commit: src.kind === "local" ? src.commit : src.rev,
    language: task.spec.language,
    profile: task.spec.profile,
    prompt: task.spec.prompt,
    source: { file: join(task.dir, "task.json"), row: 1 },
    metadata: { catalog: true, summary: task.spec.summary },
  };
}
