import { lstat, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, posix, relative } from "node:path";
import type { RowError } from "./dataset-row.js";
import type { BuiltRootfs } from "./dockerfile-build.js";
import {
  type Environment,
  environmentOf,
  HARBOR_DIR,
  type HarborProblem,
  type HarborTaskToml,
  harborTaskSpec,
  MOUNTS_DIR,
  offlinePytestPip,
  offlineServedApt,
  offlineUvVerifier,
  parseTaskToml,
  patchOfSolveScript,
  rewriteTestFile,
  rewriteTestScript,
  testFileProblem,
  withoutCtrf,
} from "./harbor.js";
import {
  type AgentUser,
  agentUserMetadata,
  agentUserOf,
  builtAgentUser,
  unbuiltAgentUserProblem,
} from "./harbor-agent-user.js";
import { builtEnvironment, containerEvalCommand } from "./harbor-built.js";
import { composeProblem } from "./harbor-compose.js";
import { executableFiles, ORACLE_DEFAULT_TIMEOUT_MS, oraclePatch } from "./harbor-oracle.js";
import { servedEnvironment } from "./harbor-served.js";
import { unwrapUvInstallGuard } from "./harbor-uv-guard.js";
import { nestedWorkdirNote, nestedWorkdirOf } from "./harbor-workdir.js";
import { commitTree } from "./materialize.js";
import type { IntakeResult, IntakeTask } from "./swebench.js";
import { taskIdOf } from "./swebench.js";
import { writeFiles } from "./task-dir.js";
import { SANDBOX_WORKSPACE } from "./task-spec.js";

/**
 * Reading Harbor task directories into flakegym tasks (writing them out: harbor-export.ts). Only
 * regular files are read: a symbolic link anywhere in a task directory rejects it (never followed).
 */

export const isProblem = (x: object): x is HarborProblem => "reason" in x && "field" in x;

/** Every regular file under `dir` (relative paths, sorted); a link or special file is a problem. */
export async function regularFiles(dir: string, field: string): Promise<string[] | HarborProblem> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const rel = relative(dir, join(e.parentPath, e.name));
    if (rel.split("/").some((p) => p.toLowerCase() === ".git"))
      return {
        field: `${field}/${rel}`,
        reason: "is inside a .git entry, which would steer git on this host (never read)",
      };
    if (e.isSymbolicLink())
      return { field: `${field}/${rel}`, reason: "is a symbolic link (never followed)" };
    if (e.isFile()) out.push(rel);
    else if (!e.isDirectory()) return { field: `${field}/${rel}`, reason: "is not a regular file" };
  }
  return out.sort();
}

/** A regular file's text, or undefined when absent; a link is a problem. */
async function readRegular(path: string, field: string): Promise<string | undefined | HarborProblem> {
  const st = await lstat(path).catch(() => undefined);
  if (st === undefined) return undefined;
  if (!st.isFile()) return { field, reason: "is not a regular file (links are never followed)" };
  return await readFile(path, "utf8");
}

/** Is `dir` a Harbor task directory (it holds task.toml)? */
export async function isHarborDir(dir: string): Promise<boolean> {
  return (await lstat(join(dir, "task.toml")).catch(() => undefined))?.isFile() ?? false;
}

/** The Harbor task directories at `path`: itself when it holds task.toml, else its sub-directories that do. */
export async function harborDirs(path: string): Promise<string[]> {
  if (await isHarborDir(path)) return [path];
  const out: string[] = [];
  for (const e of (await readdir(path, { withFileTypes: true })).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    if (e.isDirectory() && (await isHarborDir(join(path, e.name)))) out.push(join(path, e.name));
  }
  return out;
}

const NETWORK_IN_TESTS =
  /\b(curl|wget|apt-get|apk\s+add|pip3?\s+install|uvx?\b|npm\s+(install|ci)|npx(?![^\n]*--no-install))/;

/** A Harbor directory's task.toml, instruction and environment, read and checked. */
interface HarborHead {
  /** Every regular file of the directory (relative, sorted). */
  readonly all: readonly string[];
  readonly toml: HarborTaskToml;
  readonly instruction: string;
  readonly env: Environment;
  /** The environment built from the Dockerfile (`--build-env`), when it was. */
  readonly built?: BuiltRootfs;
  /** task.toml's `agent.user` as the built environment's /etc/passwd gives it (harbor-agent-user.ts). */
  readonly agentUser?: AgentUser;
  /** A built WORKDIR inside /workspace: where solve.sh and the verifier start (the workspace is /workspace). */
  readonly startDir?: string;
}

/** How Harbor directories are read: `buildEnv` builds each Dockerfile into a root filesystem (tasks/harbor-built.ts). */
export interface HarborReadOptions {
  readonly buildEnv?: { readonly cacheRoot: string; readonly log?: (line: string) => void };
}

/** The hidden tests as flakegym stores them (`hidden/.harbor/tests/…`), and what intake changed. */
interface HarborTests {
  readonly testFiles: string[];
  readonly hidden: Record<string, Buffer | string>;
  readonly notes: string[];
}

/**
 * Reads one Harbor task directory into a task (number `index` in a listing, for the report), or
 * says which file is wrong and why.
 */
export async function readHarborDir(
  dir: string,
  index: number,
  o: HarborReadOptions = {},
): Promise<IntakeResult> {
  const id = taskIdOf(basename(dir));
  const fail = (p: HarborProblem): IntakeResult => ({
    ok: false,
    error: { file: dir, row: index, field: p.field, reason: p.reason, id },
  });
  const head = await readHarborHead(dir, o);
  if (isProblem(head)) return fail(head);
  const { env } = head;
  const notes0: string[] = [];
  const copied = head.built
    ? await builtWorkspace(head.built.dir, env.workdir)
    : await readWorkspace(dir, env);
  if (isProblem(copied)) return fail(copied);
  const mounted = await readMounts(dir, env);
  if (isProblem(mounted)) return fail(mounted);
  const tests = await readHarborTests(dir, env.workdir, head.built !== undefined);
  if (isProblem(tests)) return fail(tests);
  const { repo, note } = withEmptyWorkspace(copied, env.workdir);
  const executables = head.built
    ? await builtExecutables(head.built.dir, env.workdir, Object.keys(copied))
    : [];
  const served = head.built ? { note: head.built.servedBy } : await servedEnvironment(env);
  if (isProblem(served)) return fail(served);
  const solution = await readSolution(dir, head, {
    repo,
    executables,
    mounts: mounted.files,
    mountAts: mounted.mounts.map((m) => m.at),
  });
  if (isProblem(solution)) return fail(solution);
  const unread = unreadComposeNote(head.all);
  if (head.startDir) notes0.push(nestedWorkdirNote(head.startDir, env.workdir));
  const notes = [
    ...tests.notes,
    served.note,
    ...(note === undefined ? [] : [note]),
    ...(unread === undefined ? [] : [unread]),
    ...notes0,
    ...solution.notes,
  ];
  const files: Record<string, Buffer | string> = { "solution.patch": solution.patch, ...tests.hidden };
  for (const [p, c] of Object.entries(repo)) files[`repo/${p}`] = c;
  Object.assign(files, mounted.files);
  Object.assign(files, await keptEnvironment(dir, head.all));
  const commit = await commitOf(repo, executables);
  try {
    const { toml, instruction } = head;
    const spec = harborTaskSpec({
      id,
      toml,
      instruction,
      env,
      testFiles: tests.testFiles,
      solution: solution.patch,
      commit,
      mounts: mounted.mounts,
      ...(head.built
        ? { evalCommand: containerEvalCommand(head.startDir ?? env.workdir, toml.verifier.timeout_sec) }
        : {}),
      metadata: {
        harbor_environment: served.note,
        harbor_solution: solution.source,
        harbor_image: env.image,
        ...(head.built ? { harbor_rootfs: head.built.key } : {}),
        ...(head.agentUser ? agentUserMetadata(head.agentUser) : {}),
        ...(env.aptPackages.length > 0 ? { harbor_apt: env.aptPackages.join(" ") } : {}),
      },
    });
    const task: IntakeTask = {
      spec,
      files,
      source: { file: dir, row: index },
      ...(notes.length > 0 ? { notes } : {}),
      ...(executables.length > 0 ? { executables: executables.map((f) => `repo/${f}`) } : {}),
    };
    return { ok: true, task };
  } catch (err) {
    return fail(specProblem(err));
  }
}

/** A task spec's schema error as a problem: each issue's field and message, not zod's JSON. Pure. */
export function specProblem(err: unknown): HarborProblem {
  const issues = (err as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
  if (!Array.isArray(issues)) return { field: "task.toml", reason: (err as Error).message };
  const fields = [...new Set(issues.map((i) => i.path.map(String).join(".") || "(task)"))];
  return {
    field: `task.toml (as the task's ${fields.join(", ")})`,
    reason: issues.map((i) => i.message).join("; "),
  };
}

/** Where a task folder keeps the Harbor dir's own environment/ (its Dockerfile and build context) for re-export. */
export const KEPT_ENVIRONMENT_DIR = "harbor-environment";

/** The dir's environment/ files, kept whole under KEPT_ENVIRONMENT_DIR (task-folder path → content). */
async function keptEnvironment(dir: string, all: readonly string[]): Promise<Record<string, Buffer>> {
  const out: Record<string, Buffer> = {};
  for (const f of all)
    if (f.startsWith("environment/"))
      out[`${KEPT_ENVIRONMENT_DIR}/${f.slice("environment/".length)}`] = await readFile(join(dir, f));
  return out;
}

/** The directories of environment/ (build-context relative: `queries`, `app/src`), from the dir's files. Pure. */
export function contextDirsOf(all: readonly string[]): Set<string> {
  const dirs = new Set<string>(["."]);
  for (const f of all) {
    if (!f.startsWith("environment/")) continue;
    const parts = f.slice("environment/".length).split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
  }
  return dirs;
}

/** task.toml, the layout, instruction.md and environment/Dockerfile, in the order they are checked. */
async function readHarborHead(dir: string, o: HarborReadOptions): Promise<HarborHead | HarborProblem> {
  const all = await regularFiles(dir, ".");
  if (isProblem(all)) return all;
  const tomlText = await readRegular(join(dir, "task.toml"), "task.toml");
  if (tomlText === undefined) return { field: "task.toml", reason: "missing" };
  if (typeof tomlText !== "string") return tomlText;
  const toml = parseTaskToml(tomlText);
  if (isProblem(toml)) return toml;
  const layout = layoutProblem(toml, all);
  if (layout?.field.startsWith("environment/")) {
    const text = await readRegular(join(dir, layout.field), layout.field);
    return typeof text === "string" ? composeProblem(layout.field, text) : (text ?? layout);
  }
  if (layout) return layout;
  const user = agentUserOf(toml);
  if (user !== undefined && !o.buildEnv) return unbuiltAgentUserProblem(user);
  const instruction = await readRegular(join(dir, "instruction.md"), "instruction.md");
  if (typeof instruction !== "string" || instruction.trim() === "")
    return typeof instruction === "object"
      ? instruction
      : {
          field: "instruction.md",
          reason:
            "missing or empty: Harbor gives instruction.md to the agent as its task, so there is nothing to ask; the task is incomplete, not imported",
        };
  // what Harbor itself needs to run the task (its verifier, its oracle), before any build
  const unrunnable = missingPartProblem(all);
  if (unrunnable) return unrunnable;
  const dockerfile = await readRegular(join(dir, "environment/Dockerfile"), "environment/Dockerfile");
  if (dockerfile === undefined) return missingDockerfile(toml.environment.docker_image);
  if (typeof dockerfile !== "string") return dockerfile;
  if (o.buildEnv) {
    const b = await builtEnvironment(dir, dockerfile, toml, o.buildEnv);
    if (isProblem(b)) return b;
    const agentUser = user === undefined ? undefined : await builtAgentUser(b.built.dir, user);
    if (agentUser && isProblem(agentUser)) return agentUser;
    const nested = nestedWorkdirOf(b.env.workdir, SANDBOX_WORKSPACE);
    return {
      all,
      toml,
      instruction,
      env: nested ? { ...b.env, workdir: nested.root } : b.env,
      built: b.built,
      ...(agentUser ? { agentUser } : {}),
      ...(nested ? { startDir: nested.startDir } : {}),
    };
  }
  const env = environmentOf(dockerfile, contextDirsOf(all), toml.environment.workdir);
  if (isProblem(env)) return env;
  return { all, toml, instruction, env };
}

/**
 * A task Harbor itself could not run, named by the part it lacks: tests/test.sh (its verifier) or a
 * reference solution (solution/solve.sh or solution/*.patch, its oracle). Checked before any build. Pure.
 */
export function missingPartProblem(all: readonly string[]): HarborProblem | undefined {
  if (!all.includes("tests/test.sh")) {
    const near = all.find((f) => /^[^/]+\/test\.sh$/.test(f));
    return {
      field: "tests/test.sh",
      reason: `missing: Harbor runs tests/test.sh as the verifier${near ? ` (found ${near}, which Harbor does not read)` : ""}; the task is incomplete, not imported`,
    };
  }
  if (!all.some((f) => f === "solution/solve.sh" || /^solution\/[^/]+\.(patch|diff)$/.test(f)))
    return {
      field: "solution/solve.sh",
      reason:
        "missing: Harbor's oracle runs solution/solve.sh (flakegym also takes solution/*.patch), the reference that validate checks gold against; the task is incomplete, not imported",
    };
  return undefined;
}

/** The problem of a task without environment/Dockerfile, naming the prebuilt image it names instead. Pure. */
export function missingDockerfile(image: string | undefined): HarborProblem {
  return {
    field: "environment/Dockerfile",
    reason: image
      ? `missing: the task names the prebuilt image '${image}', which flakegym cannot turn into a workspace`
      : "missing",
  };
}

/** The workspace: what the Dockerfile's COPY lines put under WORKDIR (path → content). */
async function readWorkspace(dir: string, env: Environment): Promise<Record<string, Buffer> | HarborProblem> {
  return await readCopies(dir, env.copies);
}

/**
 * The workspace of a built environment: every file under WORKDIR in the built tree, what its COPY
 * lines put there and what its RUN lines made there (seeded data, generated files), which the
 * workspace bound at WORKDIR would otherwise hide.
 */
export async function builtWorkspace(
  tree: string,
  workdir: string,
): Promise<Record<string, Buffer> | HarborProblem> {
  const root = join(tree, workdir);
  if (!(await lstat(root).catch(() => undefined))?.isDirectory()) return {};
  const files = await regularFiles(root, `environment/Dockerfile: WORKDIR ${workdir} as built`);
  if (isProblem(files)) return files;
  const out: Record<string, Buffer> = {};
  for (const f of files) out[f] = await readFile(join(root, f));
  return out;
}

/** The files of `files` (workspace-relative) the built tree has executable under `workdir`: the image's bit kept. */
export async function builtExecutables(
  tree: string,
  workdir: string,
  files: readonly string[],
): Promise<string[]> {
  const out: string[] = [];
  for (const f of files) if (((await lstat(join(tree, workdir, f))).mode & 0o111) !== 0) out.push(f);
  return out.sort();
}

/** The task-folder directory a container path's files are kept in. Pure. */
export const mountDirOf = (at: string) => `${MOUNTS_DIR}${at}`;

/** What the Dockerfile copies outside WORKDIR: files under `container/<path>/` and the mounts showing them. */
async function readMounts(
  dir: string,
  env: Environment,
): Promise<{ files: Record<string, Buffer>; mounts: { dir: string; at: string }[] } | HarborProblem> {
  const files: Record<string, Buffer> = {};
  const mounts = new Map<string, { dir: string; at: string }>();
  for (const m of env.mounts) {
    const copied = await readCopies(dir, [{ from: m.from, to: ".", intoDir: true }]);
    if (isProblem(copied)) return copied;
    for (const [p, c] of Object.entries(copied)) files[posix.join(mountDirOf(m.at), p)] = c;
    mounts.set(m.at, { dir: mountDirOf(m.at), at: m.at });
  }
  return { files, mounts: [...mounts.values()] };
}

/** The files `copies` take from environment/ (workspace-relative path → content). */
async function readCopies(
  dir: string,
  copies: Environment["copies"],
): Promise<Record<string, Buffer> | HarborProblem> {
  const repo: Record<string, Buffer> = {};
  for (const c of copies) {
    const field = `environment/${c.from}`;
    const src = join(dir, "environment", c.from);
    const st = await lstat(src).catch(() => undefined);
    if (st === undefined) return { field, reason: "is copied by the Dockerfile but missing" };
    if (st.isDirectory()) {
      const files = await regularFiles(src, field);
      if (isProblem(files)) return files;
      for (const f of files) repo[posix.join(c.to, f)] = await readFile(join(src, f));
    } else if (st.isFile()) {
      repo[c.intoDir ? posix.join(c.to, basename(c.from)) : c.to] = await readFile(src);
    } else return { field, reason: "is not a regular file or directory" };
  }
  return repo;
}

/**
 * The hidden tests: tests/ copied to .harbor/tests/, test.sh made offline; pointed at the workspace,
 * or kept at /tests and /logs for a built environment (`inContainer`: its verifier runs in the
 * task's container, where the eval command copies them to /tests: harbor-built.ts).
 */
async function readHarborTests(
  dir: string,
  workdir: string,
  inContainer: boolean,
): Promise<HarborTests | HarborProblem> {
  const testsDir = join(dir, "tests");
  if (!(await lstat(testsDir).catch(() => undefined))?.isDirectory())
    return { field: "tests", reason: "missing: a Harbor task needs tests/test.sh" };
  const testFiles = await regularFiles(testsDir, "tests");
  if (isProblem(testFiles)) return testFiles;
  if (!testFiles.includes("test.sh")) return { field: "tests/test.sh", reason: "missing" };
  const hidden: Record<string, Buffer | string> = {};
  const notes: string[] = [];
  for (const f of testFiles) {
    const content = await readFile(join(testsDir, f));
    const target = `hidden/${HARBOR_DIR}/tests/${f}`;
    if (f === "test.sh") {
      const script = verifierScript(content.toString("utf8"), !inContainer);
      if (isProblem(script)) return script;
      notes.push(...script.notes);
      hidden[target] = script.script;
      continue;
    }
    const text = content.includes(0) || inContainer ? undefined : content.toString("utf8");
    const problem = text === undefined ? undefined : testFileProblem(f, text);
    const rewritten = problem === undefined ? undefined : rewriteTestFile(text!, workdir);
    if (problem && rewritten === undefined) return { field: `tests/${f}`, reason: problem };
    if (rewritten !== undefined)
      notes.push(
        `tests/${f}: /tests/ and /logs/ read at ${posix.join(workdir, HARBOR_DIR)}/ (the verifier's view of them)`,
      );
    hidden[target] = rewritten ?? content;
  }
  return { testFiles, hidden, notes };
}

/**
 * tests/test.sh as flakegym runs it: uv's installs made offline (with notes), refused when a line
 * that is not a comment still fetches over the network, paths rewritten to the workspace. Pure.
 */
export function verifierScript(
  text: string,
  rewrite = true,
): { script: string; notes: string[] } | HarborProblem {
  const uv = offlineUvVerifier(unwrapUvInstallGuard(text));
  if (isProblem(uv)) return uv;
  const pip = offlinePytestPip(uv.script);
  const apt = offlineServedApt(pip.script);
  const offline = { script: apt.script, notes: [...uv.notes, ...pip.notes, ...apt.notes] };
  // comments (`# Install uv`) run nothing
  const net = NETWORK_IN_TESTS.exec(
    offline.script
      .split("\n")
      .filter((l) => !/^\s*#/.test(l))
      .join("\n"),
  );
  if (net)
    return {
      field: "tests/test.sh",
      reason: `runs '${net[0].trim()}', which fetches over the network (the sandbox is offline): the tests must run with the profile's tools`,
    };
  const plain = withoutCtrf(offline.script);
  const script = rewrite ? rewriteTestScript(plain.script) : plain.script;
  return { script, notes: [...offline.notes, ...plain.notes] };
}

/** The reference solution and how it was had (a patch in solve.sh or solution/*.patch, else solve.sh run as Harbor's oracle). */
interface Solution {
  readonly patch: string;
  readonly source: string;
  readonly notes: readonly string[];
}

/** The reference solution: a patch in solve.sh, or solution/*.patch, else what solve.sh changes when run in the task's environment. */
async function readSolution(
  dir: string,
  head: HarborHead,
  env: {
    repo: Readonly<Record<string, Buffer>>;
    executables: readonly string[];
    mounts: Readonly<Record<string, Buffer>>;
    mountAts: readonly string[];
  },
): Promise<Solution | HarborProblem> {
  const solve = await readRegular(join(dir, "solution/solve.sh"), "solution/solve.sh");
  if (typeof solve === "object") return solve;
  const inScript = solve === undefined ? undefined : patchOfSolveScript(solve);
  if (inScript !== undefined)
    return { patch: inScript, source: "the patch inside solution/solve.sh", notes: [] };
  const patchFile = head.all.find((f) => /^solution\/[^/]+\.(patch|diff)$/.test(f));
  if (patchFile) return { patch: await readFile(join(dir, patchFile), "utf8"), source: patchFile, notes: [] };
  if (solve === undefined)
    return { field: "solution", reason: "missing: give solution/solve.sh (or solution/*.patch)" };
  if (head.env.workdir === "/")
    return {
      field: "solution/solve.sh",
      reason:
        "would run with WORKDIR /, where the workspace cannot be bound: give the Dockerfile a WORKDIR (e.g. /app)",
    };
  const solutionFiles: Record<string, Buffer> = {};
  for (const f of head.all.filter((x) => x.startsWith("solution/")))
    solutionFiles[f.slice("solution/".length)] = await readFile(join(dir, f));
  const timeoutMs = Math.round((head.toml.agent.timeout_sec ?? ORACLE_DEFAULT_TIMEOUT_MS / 1000) * 1000);
  const r = await oraclePatch({
    repo: env.repo,
    executables: env.executables,
    solution: solutionFiles,
    mounts: env.mounts,
    mountAts: env.mountAts,
    workdir: head.env.workdir,
    ...(head.startDir ? { cwd: head.startDir } : {}),
    timeoutMs,
    ...(head.built ? { systemRoot: head.built.dir } : {}),
    ...(head.agentUser ? { user: head.agentUser } : {}),
  });
  if (isProblem(r)) return r;
  const as = head.agentUser
    ? `, as agent.user ${head.agentUser.name} (${head.agentUser.uid}:${head.agentUser.gid})`
    : "";
  const source = `solution/solve.sh run as Harbor's oracle (bash, cwd ${head.startDir ?? head.env.workdir}${as}, no network); its diff of the workspace`;
  const modes = executableFiles(r.patch);
  const modeNote =
    modes.length > 0
      ? [
          `the reference makes ${modes.join(", ")} executable: the gold policy replays it with chmod +x after its file edits (Cline's write_to_file does not set the bit)`,
        ]
      : [];
  const byproducts =
    r.byproducts.length > 0
      ? [
          `left out of the reference (byproducts no test grades, remade when the code runs): ${r.byproducts.join(", ")}`,
        ]
      : [];
  const system = r.system.length > 0 ? [systemChangesNote(r.system)] : [];
  return {
    patch: r.patch,
    source,
    notes: [`reference solution: ${source}`, ...modeNote, ...byproducts, ...system],
  };
}

/** The note of what solve.sh changed outside the workspace, which the gold replay does not carry. Pure. */
export function systemChangesNote(paths: readonly string[]): string {
  return `solve.sh also changed the system outside WORKDIR (${paths.join(", ")}): only the workspace's diff is the reference, and each scoring sandbox is a fresh copy of the built tree plus the workspace, so a test of these fails gold here (Harbor's verifier shares the agent's container)`;
}

/**
 * A Dockerfile that copies nothing starts the agent in an empty WORKDIR: the workspace is then one
 * empty placeholder file, so that repo/ exists and materializes to a fixed commit (with a note). Pure.
 */
export function withEmptyWorkspace(
  repo: Readonly<Record<string, Buffer>>,
  workdir: string,
): { repo: Record<string, Buffer>; note?: string } {
  if (Object.keys(repo).length > 0) return { repo: { ...repo } };
  return {
    repo: { [EMPTY_WORKSPACE_FILE]: Buffer.alloc(0) },
    note: `environment/Dockerfile copies no files into WORKDIR ${workdir}: the workspace starts empty (holding only ${EMPTY_WORKSPACE_FILE})`,
  };
}

/** The one file of a workspace the Dockerfile copies nothing into. */
export const EMPTY_WORKSPACE_FILE = ".gitkeep";

/**
 * What running Harbor's steps (harbor ≥ 0.26 `StepConfig`: name, agent/verifier timeouts and env,
 * `min_reward`, `healthcheck`, artifacts; `steps/<name>/` with instruction.md, tests/, solution/,
 * workdir/ + setup.sh) would need that flakegym has not got.
 */
export const MULTI_STEP_MISSING =
  "a rollout sends one prompt and scores once at its end — several prompts in one trajectory, a verifier per step recorded in score.json, each step's workdir/ upload and setup.sh between prompts, its healthcheck and the min_reward early stop are not built, so the per-step prompts and verifiers would be lost";

/**
 * Layouts flakegym does not read, refused by name before anything else is checked: the multi-step
 * layout (`[[steps]]` in task.toml, or a `steps/` directory, each step with its own instruction
 * and tests) and Docker Compose environments (sidecar services beside the agent's container). Pure.
 */
export function layoutProblem(
  toml: Record<string, unknown>,
  files: readonly string[],
): HarborProblem | undefined {
  if (Array.isArray(toml.steps) || files.some((f) => f.startsWith("steps/"))) {
    const names = Array.isArray(toml.steps)
      ? toml.steps.map((st) => (st && typeof st === "object" && "name" in st ? String(st.name) : "?"))
      : [];
    return {
      field: Array.isArray(toml.steps) ? "task.toml: steps" : "steps/",
      reason: `uses Harbor's multi-step layout (one instruction and verifier per step${names.length > 0 ? `: ${names.join(", ")}` : ""}), which flakegym does not import yet: ${MULTI_STEP_MISSING}; only single-step tasks (instruction.md, tests/test.sh) are supported`,
    };
  }
  if (files.includes(HARBOR_COMPOSE_FILE)) {
    return {
      field: HARBOR_COMPOSE_FILE,
      reason:
        "defines a Docker Compose environment (sidecar services beside the task container), which flakegym's single sandbox cannot run: not imported",
    };
  }
  return undefined;
}

/**
 * The one Compose file Harbor reads: its Docker environment merges `environment/docker-compose.yaml`
 * (exactly that name) over its own `main` service; any other Compose-named file
 * (`docker-compose.yml`, `compose.yaml`) is only a build-context file to Harbor, and so here.
 */
export const HARBOR_COMPOSE_FILE = "environment/docker-compose.yaml";

/** The note for Compose-named files Harbor does not read (they stay build-context files). Pure. */
export function unreadComposeNote(files: readonly string[]): string | undefined {
  const unread = files.filter(
    (f) => /^environment\/(docker-)?compose\.ya?ml$/.test(f) && f !== HARBOR_COMPOSE_FILE,
  );
  if (unread.length === 0) return undefined;
  return `${unread.join(", ")}: not read as a Compose environment (Harbor reads only ${HARBOR_COMPOSE_FILE}); its services are not started, as under Harbor, and the file stays part of the build context`;
}

/** The commit id `files` materialize to (catalog identity), as materializeSource will check it. */
async function commitOf(
  files: Readonly<Record<string, Buffer | string>>,
  executables: readonly string[] = [],
): Promise<string> {
  const tmp = await mkdtemp(join(tmpdir(), "flakegym-harbor-"));
  try {
    await writeFiles(tmp, files, executables);
    return await commitTree(tmp);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Reads every Harbor task directory at `path`; rejected ones are reported, the rest proceed. */
export async function loadHarbor(
  path: string,
  o: HarborReadOptions = {},
): Promise<{ tasks: IntakeTask[]; rejected: RowError[]; dirs: number }> {
  const dirs = await harborDirs(path);
  const tasks: IntakeTask[] = [];
  const rejected: RowError[] = [];
  const seen = new Map<string, string>();
  for (const [i, d] of dirs.entries()) {
    const r = await readHarborDir(d, i + 1, o);
    if (!r.ok) {
      rejected.push(r.error);
      continue;
    }
    const first = seen.get(r.task.spec.id);
    if (first !== undefined) {
      rejected.push({
        file: d,
        row: i + 1,
        field: "(dir)",
        reason: `task id '${r.task.spec.id}' is also ${first}`,
        id: r.task.spec.id,
      });
      continue;
    }
    seen.set(r.task.spec.id, d);
    tasks.push(r.task);
  }
  return { tasks, rejected, dirs: dirs.length };
}
