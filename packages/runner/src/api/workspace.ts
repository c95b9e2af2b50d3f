import { cp, lstat, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { ProfileId } from "@flakegym/profiles";
import { execa } from "execa";
import { match } from "ts-pattern";
import { CONTRACT_FILE } from "../contract/contract.js";
import { contractYaml, GENERIC_STAGE_FILES, genericContract } from "../contract/generic.js";
import {
  DOCS_DIR,
  HINT_FILES,
  type Hint,
  hintsFromFile,
  rankHints,
  WORKFLOWS_DIR,
} from "../contract/hints.js";
import { listTargetDir, readTargetFile } from "../contract/safe-read.js";
import { FlakegymError } from "../errors.js";
import { loadTask } from "../tasks/catalog.js";
import { gitEnv, materializeSource } from "../tasks/materialize.js";
import type { TargetRef } from "./target.js";

/** Where the dataset file of a dataset target is copied in the workspace. */
export const DATASET_DIR = "data";

/**
 * Makes the session workspace from a target: a copy of a local directory (symlinks kept as links,
 * never followed), a shallow clone (hooks off, no user config), a catalog task's source, or a fresh
 * dir holding a dataset file. Returns a catalog task's prompt, for its prompts.
 */
export async function materializeTarget(
  target: TargetRef,
  workspace: string,
  signal: AbortSignal,
): Promise<{ taskPrompt?: string }> {
  return await match(target)
    .with({ kind: "local" }, async (t) => {
      // regular files, dirs and symlinks (as links) only: a FIFO or device would block or leak a read
      const plain = async (src: string) => {
        const st = await lstat(src);
        return st.isFile() || st.isDirectory() || st.isSymbolicLink();
      };
      await cp(t.path, workspace, {
        recursive: true,
        verbatimSymlinks: true,
        dereference: false,
        filter: plain,
      });
      return {};
    })
    .with({ kind: "git" }, async (t) => {
      const r = await execa(
        "git",
        [
          "-c",
          "core.hooksPath=/dev/null",
          "-c",
          "protocol.ext.allow=never",
          "clone",
          "-q",
          "--depth",
          "1",
          "--",
          t.url,
          workspace,
        ],
        { env: gitEnv(), reject: false, timeout: 600_000, cancelSignal: signal, stdin: "ignore" },
      );
      if (r.exitCode !== 0) {
        throw new FlakegymError(
          "E_TARGET_CLONE",
          `git clone ${t.url} failed (exit ${r.exitCode}): ${r.stderr.trim()}`,
          {
            hint: "check the URL and that this machine can reach it",
          },
        );
      }
      return {};
    })
    .with({ kind: "dataset" }, async (t) => {
      await mkdir(join(workspace, DATASET_DIR), { recursive: true });
      await cp(t.file, join(workspace, DATASET_DIR, basename(t.file)), { dereference: false });
      return {};
    })
    .with({ kind: "task" }, async (t) => {
      const task = await loadTask(t.id);
      await materializeSource(task, workspace, { signal });
      return { taskPrompt: task.spec.prompt };
    })
    .exhaustive();
}

/** Candidate commands from the workspace's own files (plain capped reads, no symlinks). */
export async function collectHints(workspace: string): Promise<Hint[]> {
  const files: string[] = [...HINT_FILES];
  for (const f of await listTargetDir(workspace, WORKFLOWS_DIR, 50)) files.push(`${WORKFLOWS_DIR}/${f}`);
  for (const f of (await listTargetDir(workspace, DOCS_DIR, 200))
    .filter((n) => n.endsWith(".md"))
    .slice(0, 20)) {
    files.push(`${DOCS_DIR}/${f}`);
  }
  const hints: Hint[] = [];
  for (const f of files) {
    const text = await readTargetFile(workspace, f);
    if (text !== undefined) hints.push(...hintsFromFile(f, text));
  }
  return rankHints(hints);
}

/** Files at a repository's root that name its language, in the order they decide. */
const PROFILE_MARKERS: readonly (readonly [ProfileId, (name: string) => boolean])[] = [
  ["rust", (n) => n === "Cargo.toml"],
  ["go", (n) => n === "go.mod"],
  ["node", (n) => n === "package.json" || n === "deno.json"],
  [
    "python",
    (n) =>
      [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "tox.ini",
        "noxfile.py",
        "pytest.ini",
        "Pipfile",
        "poetry.lock",
        "uv.lock",
        "conftest.py",
        "environment.yml",
      ].includes(n) || /^requirements([-_.][\w.-]*)?\.(txt|in)$/.test(n),
  ],
  ["c", (n) => ["CMakeLists.txt", "meson.build", "configure.ac"].includes(n)],
];

/** Source file extensions and the profile each speaks for. */
const EXT_PROFILE: Readonly<Record<string, ProfileId>> = {
  py: "python",
  rs: "rust",
  go: "go",
  js: "node",
  mjs: "node",
  cjs: "node",
  ts: "node",
  c: "c",
  h: "c",
};

/**
 * The profile a repository's own files suggest: a marker file at its root (Cargo.toml, go.mod,
 * package.json, any of Python's project, test or requirements files, a C build file), else the
 * language most of its source files are in (`extCounts`: extension → files), else dev-base. Pure.
 */
export function guessProfile(
  rootFiles: ReadonlySet<string>,
  extCounts: ReadonlyMap<string, number> = new Map(),
): ProfileId {
  for (const [profile, isMarker] of PROFILE_MARKERS) if ([...rootFiles].some(isMarker)) return profile;
  const votes = new Map<ProfileId, number>();
  for (const [ext, n] of extCounts) {
    const p = EXT_PROFILE[ext];
    if (p) votes.set(p, (votes.get(p) ?? 0) + n);
  }
  const best = [...votes].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0];
  return best ? best[0] : "dev-base";
}

/** Writes the generic contract and its stage scripts into the workspace (ours: a copy of the target). */
export async function writeGenericContract(workspace: string, profile: ProfileId) {
  const contract = genericContract(profile);
  await rm(join(workspace, ".flakegym"), { recursive: true, force: true });
  await rm(join(workspace, CONTRACT_FILE), { force: true });
  await mkdir(join(workspace, ".flakegym", "stages"), { recursive: true });
  for (const [rel, text] of Object.entries(GENERIC_STAGE_FILES)) await writeFile(join(workspace, rel), text);
  await writeFile(join(workspace, CONTRACT_FILE), contractYaml(contract));
  return contract;
}

/** Names of the regular files and dirs at the workspace root (for {@link guessProfile}). */
export async function rootNames(workspace: string): Promise<Set<string>> {
  const st = await lstat(workspace);
  if (!st.isDirectory()) return new Set();
  return new Set(
    (await readdir(workspace, { withFileTypes: true })).filter((e) => !e.isSymbolicLink()).map((e) => e.name),
  );
}

const NOT_SOURCE_DIRS = new Set([
  ".git",
  "node_modules",
  "target",
  "vendor",
  "dist",
  "build",
  ".venv",
  "venv",
]);

/**
 * How many files of each extension the workspace holds, three levels deep and 5 000 entries at
 * most, symlinks never followed (for {@link guessProfile}).
 */
export async function extensionCounts(workspace: string, maxEntries = 5000): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let seen = 0;
  let level = [workspace];
  for (let depth = 0; depth < 3 && level.length && seen < maxEntries; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (++seen > maxEntries) break;
        if (e.isDirectory() && !NOT_SOURCE_DIRS.has(e.name)) next.push(join(dir, e.name));
        const ext = e.isFile() ? /\.([a-z]+)$/.exec(e.name)?.[1] : undefined;
        if (ext) counts.set(ext, (counts.get(ext) ?? 0) + 1);
      }
    }
    level = next;
  }
  return counts;
}
