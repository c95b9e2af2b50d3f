import { readdir, readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ProfileId } from "@flakegym/profiles";
import { z } from "zod";
import { FlakegymError, UsageError } from "../errors.js";
import { formatIssuePath, leafIssues } from "../text/zod-issues.js";

/**
 * An eval scenario: a small directory holding `scenario.json` (a prompt, an optional template
 * copied into an empty git workspace, and checks) and the files it names. `compileScenario`
 * (compile-scenario.ts) turns it into a catalog task whose hidden tests are the checks, so a
 * scenario is snapshotted, run and scored by the same code as any rollout task.
 */

/** The curated scenarios shipped with flakegym (`--suite smoke` runs them all). */
export const BUILTIN_SCENARIOS_DIR = fileURLToPath(new URL("../../catalog/scenarios/", import.meta.url));

/** The built-in suites: a name and the scenario ids it runs. */
export const SUITES: Readonly<Record<string, readonly string[]>> = {
  smoke: ["create-file", "edit-file", "read-summarize", "multi-file", "typescript-function"],
};

const Path = z
  .string()
  .min(1)
  .refine(
    (p) => !p.startsWith("/") && !p.split("/").includes(".."),
    "must be a relative path inside the workspace",
  );

const Pattern = z
  .string()
  .min(1)
  .refine((p) => {
    try {
      new RegExp(p, "m");
      return true;
    } catch {
      return false;
    }
  }, "must be a valid JavaScript regular expression");

export const FileExistsCheck = z
  .object({
    kind: z.literal("file_exists"),
    name: z.string().min(1).optional().describe("the check's name in reports (default: derived)"),
    path: Path.describe("a regular file that must exist (a symbolic link does not count)"),
  })
  .strict();

export const ContentCheck = z
  .object({
    kind: z.literal("content"),
    name: z.string().min(1).optional().describe("the check's name in reports (default: derived)"),
    path: Path.describe("the file whose content is checked (it must exist)"),
    must_match: z
      .array(Pattern)
      .default([])
      .describe("regular expressions (multiline) the content must match"),
    must_not_match: z.array(Pattern).default([]).describe("regular expressions the content must not match"),
  })
  .strict()
  .refine((c) => c.must_match.length + c.must_not_match.length > 0, {
    message: "give at least one of must_match / must_not_match",
    path: ["must_match"],
  });

export const CommandCheck = z
  .object({
    kind: z.literal("command"),
    name: z.string().min(1).optional().describe("the check's name in reports (default: derived)"),
    command: z
      .string()
      .min(1)
      .describe("shell command that must exit 0 in the workspace of the scoring sandbox"),
    timeout_s: z.number().int().positive().max(600).default(60).describe("seconds the command may take"),
  })
  .strict();

export const Check = z
  .union([FileExistsCheck, ContentCheck, CommandCheck])
  .describe("one thing the result must satisfy");
export type Check = z.infer<typeof Check>;

export const ScenarioSpec = z
  .object({
    $comment: z.string().optional().describe("free text for maintainers"),
    version: z.literal(1).describe("scenario format version"),
    summary: z.string().min(1).describe("one line describing the scenario"),
    prompt: z.string().min(1).describe("what the agent is asked"),
    profile: ProfileId.default("node").describe("toolchain profile of the workspace"),
    template: z
      .string()
      .min(1)
      .optional()
      .describe("directory (relative to the scenario) copied into the workspace; absent: an empty workspace"),
    hidden: z
      .string()
      .min(1)
      .optional()
      .describe(
        "directory (relative to the scenario) of helper files the checks use, copied to .flakegym-checks/ in the scoring sandbox only",
      ),
    solution: z
      .string()
      .min(1)
      .optional()
      .describe("reference patch (relative to the scenario); lets the `gold` policy run the scenario"),
    checks: z.array(Check).min(1).describe("every check must pass for the trial to pass"),
    limits: z
      .object({
        timeout_s: z.number().int().positive().default(300).describe("wall clock of one trial, seconds"),
      })
      .strict()
      .default({ timeout_s: 300 }),
  })
  .strict();
export type ScenarioSpec = z.infer<typeof ScenarioSpec>;

/** A loaded scenario: its id (the directory name), directory and spec. */
export interface Scenario {
  readonly id: string;
  readonly dir: string;
  readonly spec: ScenarioSpec;
}

const ID = /^[a-z0-9][a-z0-9._-]*$/;

/** The check's name as reports and the hidden-test results show it (unique within the scenario). Pure. */
export function checkNames(checks: readonly Check[]): string[] {
  const seen = new Map<string, number>();
  return checks.map((c) => {
    const base =
      c.name ??
      (c.kind === "file_exists"
        ? `file exists: ${c.path}`
        : c.kind === "content"
          ? `content of ${c.path}`
          : `command: ${c.command}`);
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return n === 1 ? base : `${base} (${n})`;
  });
}

/** The zod issues of a scenario file as one line each, naming the field. Pure. */
export function describeIssues(file: string, err: z.ZodError): string {
  return err.issues
    .flatMap((i) => leafIssues(i))
    .slice(0, 5)
    .map((i) => `${file}: field '${formatIssuePath(i.path)}': ${i.message}`)
    .join("\n");
}

async function isDir(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isDirectory() ?? false;
}

/** Reads and validates `<dir>/scenario.json` and the files it names. */
export async function loadScenario(dir: string): Promise<Scenario> {
  const abs = resolve(dir);
  const file = join(abs, "scenario.json");
  const id = abs.split("/").pop() ?? "";
  const hint = "a scenario is a directory holding scenario.json; see docs/reference/eval.md";
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    throw new UsageError(`cannot read scenario ${file}: ${(err as Error).message}`, hint);
  }
  if (!ID.test(id)) {
    throw new UsageError(
      `scenario directory name '${id}' is not a valid id`,
      "use lower-case letters, digits, '.', '_' and '-'",
    );
  }
  const parsed = ScenarioSpec.safeParse(raw);
  if (!parsed.success) throw new UsageError(describeIssues(file, parsed.error), hint);
  const spec = parsed.data;
  for (const field of ["template", "hidden"] as const) {
    const p = spec[field];
    if (p !== undefined && !(await isDir(join(abs, p))))
      throw new UsageError(`${file}: field '${field}': ${join(abs, p)} is not a directory`, hint);
  }
  if (spec.solution !== undefined) {
    const ok = (await stat(join(abs, spec.solution)).catch(() => undefined))?.isFile() ?? false;
    if (!ok)
      throw new UsageError(`${file}: field 'solution': ${join(abs, spec.solution)} is not a file`, hint);
  }
  return { id, dir: abs, spec };
}

/** The built-in scenarios of a suite; an unknown suite is a usage error listing the known ones. */
export function suiteScenarioDirs(suite: string): string[] {
  const ids = SUITES[suite];
  if (!ids) {
    throw new UsageError(
      `--suite ${suite}: no such suite`,
      `known suites: ${Object.keys(SUITES).join(", ")}`,
    );
  }
  return ids.map((id) => join(BUILTIN_SCENARIOS_DIR, id));
}

/** The ids of the built-in scenarios (for `--scenario <id>`). */
export async function builtinScenarioIds(): Promise<string[]> {
  try {
    return (await readdir(BUILTIN_SCENARIOS_DIR)).sort();
  } catch (cause) {
    throw new FlakegymError("E_CATALOG", `cannot read ${BUILTIN_SCENARIOS_DIR}`, { cause });
  }
}

/** `--scenario <id-or-dir>`: a built-in scenario id, or a path to a scenario directory. */
export async function resolveScenarioDir(arg: string, cwd: string): Promise<string> {
  if (ID.test(arg) && (await builtinScenarioIds()).includes(arg)) return join(BUILTIN_SCENARIOS_DIR, arg);
  const p = resolve(cwd, arg);
  if (await isDir(p)) return p;
  throw new UsageError(
    `--scenario ${arg}: neither a built-in scenario nor a directory`,
    `built-in scenarios: ${(await builtinScenarioIds()).join(", ")}; or give a directory holding scenario.json`,
  );
}
