import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { LoadedTask } from "./catalog.js";
import { HARBOR_DIR, PROFILE_IMAGES, restoreTestFile } from "./harbor.js";
import { isProblem, KEPT_ENVIRONMENT_DIR, regularFiles } from "./harbor-dir.js";
import type { TaskSpec } from "./task-spec.js";

/**
 * Exporting a task that was imported from a Harbor directory back as one Harbor runs it: its own
 * tests/ (test.sh with the workspace paths put back: `/tests`, `/logs/verifier`, its WORKDIR), its
 * FROM image and apt packages (kept in the task's metadata at import), its mounts, one shared
 * verifier after the agent as Harbor's default. (Wrapping its eval command in flakegym's generic
 * exported verifier would nest `.harbor/` inside itself.)
 */

const TESTS_PREFIX = `${HARBOR_DIR}/tests/`;

/** The hidden files of an imported Harbor task (`.harbor/tests/…` → content), or undefined for any other task. */
export async function importedHarborTests(task: LoadedTask): Promise<Record<string, Buffer> | undefined> {
  if (!task.paths.testsDir || task.spec.tests.run.kind !== "eval_cmd") return undefined;
  const files = await regularFiles(task.paths.testsDir, "hidden");
  if (isProblem(files) || !files.includes(`${TESTS_PREFIX}test.sh`)) return undefined;
  if (files.some((f) => !f.startsWith(TESTS_PREFIX))) return undefined;
  const out: Record<string, Buffer> = {};
  for (const f of files) out[f.slice(TESTS_PREFIX.length)] = await readFile(join(task.paths.testsDir, f));
  return out;
}

/** test.sh as Harbor runs it: the workspace paths flakegym's import pointed at the workspace put back. Pure. */
export function restoreTestScript(script: string, workdir: string): string {
  return script
    .replaceAll("$HARBOR_ROOT/logs/verifier", "/logs/verifier")
    .replaceAll("$HARBOR_ROOT/tests", "/tests")
    .replaceAll("$HARBOR_WORKSPACE", workdir);
}

/** The verifier timeout an imported task's eval command carries (`timeout -k 10 N bash …`), seconds. Pure. */
export function verifierTimeoutOf(spec: TaskSpec): number | undefined {
  const run = spec.tests.run;
  const m = run.kind === "eval_cmd" ? /\btimeout -k \d+ (\d+) bash /.exec(run.command) : null;
  return m ? Number(m[1]) : undefined;
}

/** environment/Dockerfile: the original image and apt packages (plus pytest when test.sh runs it), mounts, WORKDIR, the workspace. Pure. */
export function reexportDockerfile(spec: TaskSpec, testScript: string): string {
  const workdir = spec.workdir ?? "/app";
  const apt = (spec.metadata?.harbor_apt ?? "").split(" ").filter((p) => p !== "");
  if (/\bpython3 -m pytest\b/.test(testScript)) apt.push("python3", "python3-pytest");
  const pkgs = [...new Set(apt)];
  return [
    `FROM ${spec.metadata?.harbor_image ?? PROFILE_IMAGES[spec.profile]}`,
    ...(pkgs.length > 0
      ? [`RUN apt-get update && apt-get install -y ${pkgs.join(" ")} && rm -rf /var/lib/apt/lists/*`]
      : []),
    ...(spec.mounts ?? []).map((m) => `COPY ${m.dir}/ ${m.at}/`),
    `WORKDIR ${workdir}`,
    `COPY repo/ ${workdir}/`,
    "",
  ].join("\n");
}

/** task.toml: Harbor's current schema, one step, the verifier in the agent's environment after it. Pure. */
export function reexportTaskToml(spec: TaskSpec): string {
  const verifier = verifierTimeoutOf(spec);
  return [
    'schema_version = "1.4"',
    "",
    "[metadata]",
    ...(spec.difficulty ? [`difficulty = ${JSON.stringify(spec.difficulty)}`] : []),
    "",
    "[verifier]",
    `timeout_sec = ${(verifier ?? 900).toFixed(1)}`,
    "",
    "[agent]",
    `timeout_sec = ${(spec.limits.wallClockMs / 1000).toFixed(1)}`,
    "",
    "[environment]",
    `memory_mb = ${spec.limits.memoryMb}`,
    `storage_mb = ${spec.limits.diskMb}`,
    // the task's container path, also when its kept Dockerfile has no WORKDIR (task.toml gave it)
    ...(spec.workdir ? [`workdir = ${JSON.stringify(spec.workdir)}`] : []),
    "",
  ].join("\n");
}

/**
 * The imported Harbor dir's own environment/ as it was (Dockerfile and build context, kept at
 * import under KEPT_ENVIRONMENT_DIR), or undefined when the task folder has none (imported before it
 * was kept, or not a Harbor task).
 */
export async function keptEnvironmentFiles(task: LoadedTask): Promise<Record<string, Buffer> | undefined> {
  const root = join(task.dir, KEPT_ENVIRONMENT_DIR);
  const files = await regularFiles(root, KEPT_ENVIRONMENT_DIR).catch(() => undefined);
  if (files === undefined || isProblem(files) || !files.includes("Dockerfile")) return undefined;
  const out: Record<string, Buffer> = {};
  for (const f of files) out[`environment/${f}`] = await readFile(join(root, f));
  return out;
}

/** The files of the Harbor directory an imported Harbor task goes back to (beside instruction, solution, repo). */
export async function reexportFiles(
  task: LoadedTask,
  tests: Readonly<Record<string, Buffer>>,
): Promise<Record<string, string | Buffer>> {
  const { spec } = task;
  const workdir = spec.workdir ?? "/app";
  const script = restoreTestScript(tests["test.sh"]!.toString("utf8"), workdir);
  const files: Record<string, string | Buffer> = {
    "task.toml": reexportTaskToml(spec),
    "environment/Dockerfile": reexportDockerfile(spec, script),
  };
  for (const [p, c] of Object.entries(tests))
    files[`tests/${p}`] =
      p === "test.sh" ? script : c.includes(0) ? c : restoreTestFile(c.toString("utf8"), workdir);
  return files;
}
