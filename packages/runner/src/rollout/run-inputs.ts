import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { parsePolicySpec } from "../policy/spec.js";
import type { RunConfig } from "../run-format/schema.js";
import { BUILTIN_CATALOG_DIR } from "../tasks/catalog.js";

/**
 * The files a run's result depends on besides its flags: every file of each catalog task (prompt,
 * limits, repo, hidden tests), each scripted plan, and the tokenizer's files. run.json keeps their
 * sha256 (`inputs`) by a stable name (`task <id>/<file>`, `plan <path>`, `tokenizer <file>`: a moved
 * checkout or store path is no change), and `--resume` refuses to mix a changed one into a run (a group would hold
 * trajectories of two different tasks). A dataset file is checked on its own (dataset-tasks.ts).
 */

/** Files under `dir`, recursively (no .git or node_modules), relative to it. */
async function filesUnder(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
    if (d.name === ".git" || d.name === "node_modules") continue;
    const r = rel ? `${rel}/${d.name}` : d.name;
    if (d.isDirectory()) out.push(...(await filesUnder(dir, r)));
    else if (d.isFile()) out.push(r);
  }
  return out;
}

/** One input file: a stable name (where the file lives may move; what it holds may not) and its path. */
export interface RunInput {
  /** `task <id>/<file>`, `plan <path as given>` or `tokenizer <file>`. */
  readonly key: string;
  readonly path: string;
}

/** The input files of a run, from its config, sorted by key. */
export async function runInputFiles(config: RunConfig, cwd: string): Promise<RunInput[]> {
  const inputs: RunInput[] = [];
  if (!config.dataset) {
    const catalog = resolve(cwd, config.catalog ?? BUILTIN_CATALOG_DIR);
    for (const id of config.tasks) {
      const dir = join(catalog, id);
      for (const f of await filesUnder(dir).catch(() => []))
        inputs.push({ key: `task ${id}/${f}`, path: join(dir, f) });
    }
  }
  for (const p of config.policies) {
    const spec = parsePolicySpec(p);
    if (spec.kind === "scripted") inputs.push({ key: `plan ${spec.file}`, path: resolve(cwd, spec.file) });
  }
  if (config.tokenizer) {
    const dir = resolve(cwd, config.tokenizer);
    const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const d of names)
      if (d.isFile()) inputs.push({ key: `tokenizer ${d.name}`, path: join(dir, d.name) });
  }
  const byKey = new Map(inputs.map((i) => [i.key, i]));
  return [...byKey.values()].sort((a, b) => a.key.localeCompare(b.key));
}

/** sha256 of each input by key (a file that cannot be read: "missing"). */
export async function hashInputs(inputs: readonly RunInput[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const i of inputs) {
    out[i.key] = await readFile(i.path).then(
      (b) => createHash("sha256").update(b).digest("hex"),
      () => "missing",
    );
  }
  return out;
}

/** What differs between the inputs a run started with and the ones there now, one line each. Pure. */
export function inputChanges(stored: Record<string, string>, now: Record<string, string>): string[] {
  const lines: string[] = [];
  for (const [f, h] of Object.entries(stored)) {
    if (!(f in now) || now[f] === "missing") lines.push(`removed: ${f}`);
    else if (now[f] !== h) lines.push(`changed: ${f}`);
  }
  for (const f of Object.keys(now)) if (!(f in stored)) lines.push(`added: ${f}`);
  return lines;
}

/** Refuses a resume whose inputs changed, naming what changed (exit 2). */
export function checkResumeInputs(
  dir: string,
  stored: Record<string, string>,
  now: Record<string, string>,
  pathOf: (key: string) => string | undefined = () => undefined,
): void {
  const changes = inputChanges(stored, now).map((l) => {
    const path = pathOf(l.slice(l.indexOf(": ") + 2));
    return path ? `${l} (${path})` : l;
  });
  if (changes.length === 0) return;
  const shown = changes.slice(0, 20).map((l) => `  ${l}`);
  if (changes.length > 20) shown.push(`  … and ${changes.length - 20} more`);
  throw new UsageError(
    `--resume ${dir}: ${changes.length} input file(s) changed since the run started, so its groups would mix old and new:\n${shown.join("\n")}`,
    `restore them to finish this run, or start a new run (another --out) with the changed files`,
    "E_INPUT_CHANGED",
  );
}
