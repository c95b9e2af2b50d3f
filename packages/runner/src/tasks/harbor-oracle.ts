import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { type Bind, buildBwrapArgs, type SystemRoot } from "../workers/local/bwrap-args.js";
import {
  CONTAINER_CAPS,
  containerEnv,
  containerPrefix,
  containerRootOf,
  imageEnvOf,
  mountContainerRoot,
  unmountContainerRoot,
  upperChanges,
} from "../workers/local/container-root.js";
import { findBwrap } from "../workers/local/shape.js";
import { prepareMountPoints, readSystemRoot } from "../workers/local/system-root.js";
import { DONE_MARK } from "./debian-base.js";
import { type HarborProblem, MOUNTS_DIR } from "./harbor.js";
import type { AgentUser } from "./harbor-agent-user.js";
import { git } from "./materialize.js";
import { writeFiles } from "./task-dir.js";

/**
 * Harbor's oracle agent, for import: `solution/solve.sh` runs in the task's environment with the
 * workspace at the task's WORKDIR (its cwd), and what it changed there — a git diff of the
 * workspace — becomes the reference patch the gold policy replays. The script runs in bubblewrap
 * (no network, the system read-only, root inside a user namespace as Harbor's oracle is root), never
 * on the host; git runs on the host with its own git dir outside the workspace and no user or
 * system config, so nothing the script wrote steers it.
 */

/** How long solve.sh may run when task.toml gives no agent timeout, ms. */
export const ORACLE_DEFAULT_TIMEOUT_MS = 600_000;

/** What solve.sh needs to run. */
export interface OracleInput {
  /** The workspace files before the agent (path → content). */
  readonly repo: Readonly<Record<string, Buffer | string>>;
  /** Those of `repo` that are executable (the built image's bit). */
  readonly executables?: readonly string[];
  /** solution/solve.sh and anything else in solution/ (relative path → content), mounted at /solution. */
  readonly solution: Readonly<Record<string, Buffer | string>>;
  /** Files shown read-only outside the workspace (`container/<abs path>/…` → content), as the task's mounts show them. */
  readonly mounts?: Readonly<Record<string, Buffer | string>>;
  /** The container paths those files are shown at (`container/<at>` read-only at `<at>`). */
  readonly mountAts?: readonly string[];
  /** The task's WORKDIR (where the workspace is and solve.sh runs). */
  readonly workdir: string;
  /** Where solve.sh starts when not at the workspace's root (a built WORKDIR inside /workspace). */
  readonly cwd?: string;
  readonly timeoutMs: number;
  /** The task's built environment (tasks/harbor-built.ts): its root filesystem as the system. */
  readonly systemRoot?: string;
  /** task.toml's `agent.user` (harbor-agent-user.ts): solve.sh runs as it, in the container only. */
  readonly user?: AgentUser;
}

/**
 * What running code leaves beside the work and no one grades: Python's bytecode caches (solve.sh
 * running `python3 x.py` writes `__pycache__/*.pyc` unless PYTHONDONTWRITEBYTECODE is set). Not part
 * of the reference patch (binary, and remade by whoever runs the code next); listed in a note.
 */
export const BYPRODUCTS = ["__pycache__/", "*.py[co]"] as const;

/**
 * The diff solve.sh left (and the byproducts left out of it; in a container, what it changed in
 * the system outside the workspace, `system`), or why it cannot be the reference solution.
 */
export async function oraclePatch(
  input: OracleInput,
): Promise<{ patch: string; byproducts: string[]; system: string[] } | HarborProblem> {
  const field = "solution/solve.sh";
  const bwrap = findBwrap();
  if (!bwrap)
    return {
      field,
      reason:
        "is a script, which runs only in a sandbox, and bubblewrap (bwrap) is missing: install it (apt-get install bubblewrap) and import again",
    };
  const tmp = await mkdtemp(join(tmpdir(), "flakegym-oracle-"));
  try {
    const ws = join(tmp, "ws");
    const gitDir = join(tmp, "git");
    await writeFiles(ws, input.repo, input.executables);
    await writeFiles(join(tmp, "solution"), input.solution);
    await writeFiles(tmp, input.mounts ?? {});
    await mkdir(join(tmp, "logs", "verifier"), { recursive: true });
    const g = (args: string[]) => git(["--git-dir", gitDir, "--work-tree", ws, ...args], { cwd: tmp });
    await g(["init", "-q", "-b", "main"]);
    await writeFile(join(gitDir, "info", "exclude"), `${BYPRODUCTS.join("\n")}\n`);
    await g(["add", "-A"]);
    await g(["commit", "-q", "--no-gpg-sign", "--allow-empty", "-m", "base"]);
    const system: string[] = [];
    const run = await runSolve(bwrap, tmp, input, system);
    // back to the runner's, so host git reads the workspace as its own (no "dubious ownership")
    if (input.user) await ownedBy(tmp, { ...input.user, uid: 0, gid: 0 });
    if (run.timedOut)
      return { field, reason: `did not finish within ${input.timeoutMs} ms in the task's environment` };
    if (run.exitCode !== 0)
      return {
        field,
        reason: `exited ${run.exitCode} in the task's environment (cwd ${input.workdir}): ${tail(run.all)}`,
      };
    await g(["add", "-A"]);
    // raw: a hunk's last context lines may be blank (` `), which trimming would cut off
    const patch = await git(
      [
        "--git-dir",
        gitDir,
        "--work-tree",
        ws,
        "diff",
        "--cached",
        "--binary",
        "--no-ext-diff",
        "--no-textconv",
        "HEAD",
      ],
      { cwd: tmp, raw: true },
    );
    const left = await g(["ls-files", "--others", "--ignored", "--exclude-standard", "--directory"]);
    const byproducts = left.split("\n").filter((l) => l !== "");
    const problem = patchProblem(patch, input.workdir);
    if (problem && patch.trim() === "" && system.length > 0)
      return {
        ...problem,
        reason: `${problem.reason}: it changed only the system outside it (${system.join(", ")}), which the task's own verifier would have to read there`,
      };
    return problem ?? { patch, byproducts, system };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Runs solve.sh. On a built tree with a root runner, as in Harbor's container (root, a writable
 * copy of the tree thrown away after, the image's ENV: workers/local/container-root.ts); else on
 * the tree (or this machine's system) read-only.
 */
async function runSolve(bwrap: string, tmp: string, input: OracleInput, changed: string[]) {
  const ats = input.mountAts ?? [];
  const opts = { reject: false, timeout: input.timeoutMs, stdin: "ignore", all: true } as const;
  const solve = ["--", ...asUserPrefix(input.user), "/bin/bash", "/solution/solve.sh"];
  if (input.user && !(input.systemRoot && process.geteuid?.() === 0))
    return { timedOut: false, exitCode: 1, all: AS_USER_NEEDS_CONTAINER };
  if (input.user) await ownedBy(tmp, input.user);
  if (input.systemRoot && process.geteuid?.() === 0) {
    const cr = containerRootOf((await readSystemRoot(input.systemRoot)).dir, join(tmp, "root"));
    const env = containerEnv(ORACLE_ENV, await imageEnvOf(cr.tree, DONE_MARK));
    await mountContainerRoot(cr);
    try {
      const args = oracleBwrapArgs(tmp, input.workdir, ats, undefined, { root: cr.merged, env }, input.cwd);
      const [cmd, ...pre] = containerPrefix();
      const run = await execa(cmd!, [...pre, bwrap, ...args, ...solve], opts);
      changed.push(...(await upperChanges(cr.upper)));
      return run;
    } finally {
      await unmountContainerRoot(cr);
    }
  }
  const root = input.systemRoot ? await readSystemRoot(input.systemRoot) : undefined;
  if (root) await prepareMountPoints(root, oracleBinds(tmp, input.workdir, ats));
  return await execa(bwrap, [...oracleBwrapArgs(tmp, input.workdir, ats, root), ...solve], opts);
}

/** Why solve.sh cannot run as agent.user outside a container (only it maps the image's users). */
const AS_USER_NEEDS_CONTAINER =
  "agent.user needs the task's container (a runner that is root and a built environment): run the import as root with --build-env";

/**
 * The command prefix that runs solve.sh as `user` inside the container (setpriv of the image's
 * util-linux, with the user's groups, HOME and USER, as `docker exec -u` gives them). Pure.
 */
export function asUserPrefix(user: AgentUser | undefined): string[] {
  if (!user) return [];
  return [
    "/usr/bin/env",
    `HOME=${user.home}`,
    `USER=${user.name}`,
    `LOGNAME=${user.name}`,
    "setpriv",
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    "--init-groups",
    "--",
  ];
}

/** The oracle's workspace and /logs made `user`'s, as the image's `COPY --chown` makes them Harbor's. */
async function ownedBy(tmp: string, user: AgentUser): Promise<void> {
  for (const d of ["ws", "logs"])
    await execa("chown", ["-R", `${user.uid}:${user.gid}`, join(tmp, d)], { timeout: 60_000 });
}

/** The oracle's environment outside a container. */
const ORACLE_ENV: Readonly<Record<string, string>> = {
  PATH: "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
  HOME: "/root",
  LANG: "C.UTF-8",
  TERM: "dumb",
};

/** Why the diff solve.sh left cannot be a reference patch, or undefined. Pure. */
export function patchProblem(patch: string, workdir: string): HarborProblem | undefined {
  const field = "solution/solve.sh";
  if (patch.trim() === "")
    return {
      field,
      reason: `changed nothing under WORKDIR ${workdir}, so there is no reference work to replay`,
    };
  if (/^(new file mode|new mode) 120000$/m.test(patch))
    return { field, reason: "left a symbolic link in the workspace, which the gold policy does not replay" };
  const binary = binaryFiles(patch);
  if (binary.length > 0)
    return {
      field,
      reason: `left binary file ${binary.join(", ")} in the workspace, which the gold policy (Cline's file edits) cannot write: not imported`,
    };
  return undefined;
}

/** The files a git diff --binary changes as binary (`GIT binary patch` / `Binary files … differ`). Pure. */
export function binaryFiles(patch: string): string[] {
  const out: string[] = [];
  let file: string | undefined;
  for (const line of patch.split("\n")) {
    const head = /^diff --git a\/.* b\/(.*)$/.exec(line);
    if (head) file = head[1];
    else if ((line === "GIT binary patch" || /^Binary files .* differ$/.test(line)) && file) out.push(file);
  }
  return [...new Set(out)];
}

/** The files a patch makes executable (git's `new file mode 100755` / `new mode 100755`). Pure. */
export function executableFiles(patch: string): string[] {
  const out: string[] = [];
  let file: string | undefined;
  for (const line of patch.split("\n")) {
    const head = /^diff --git a\/.* b\/(.*)$/.exec(line);
    if (head) file = head[1];
    else if (/^(new file mode|new mode) 100755$/.test(line) && file) out.push(file);
  }
  return out;
}

/** The last lines of a failed run's output, for the error. Pure. */
function tail(out: string | undefined): string {
  const lines = (out ?? "").trim().split("\n");
  return lines.slice(-5).join(" | ").slice(0, 600) || "(no output)";
}

/** What solve.sh's sandbox binds: /solution, /logs, the mounts and the workspace at `workdir`. Pure. */
export function oracleBinds(tmp: string, workdir: string, mounts: readonly string[]): Bind[] {
  return [
    { src: join(tmp, "solution"), dest: "/solution" },
    { src: join(tmp, "logs"), dest: "/logs", rw: true },
    ...mounts.map((at) => ({ src: join(tmp, MOUNTS_DIR, at), dest: at })),
    { src: join(tmp, "ws"), dest: workdir, rw: true },
  ];
}

/**
 * bubblewrap's arguments for solve.sh: `<tmp>/ws` writable at `workdir` (the cwd), `<tmp>/solution`
 * read-only at /solution, `<tmp>/logs` writable at /logs, root inside, no network. Pure.
 */
export function oracleBwrapArgs(
  tmp: string,
  workdir: string,
  mounts: readonly string[] = [],
  systemRoot?: SystemRoot,
  container?: { readonly root: string; readonly env: Readonly<Record<string, string>> },
  cwd: string = workdir,
): string[] {
  return buildBwrapArgs({
    workspace: join(tmp, "ws"),
    workspaceDest: workdir,
    homeDest: "/root",
    tmpSizeMb: 256,
    binds: oracleBinds(tmp, workdir, mounts).filter((b) => b.dest !== workdir),
    ...(systemRoot ? { systemRoot } : {}),
    ...(container ? { container: { root: container.root, caps: CONTAINER_CAPS } } : {}),
    env: container?.env ?? ORACLE_ENV,
    cwd,
    uid: 0,
    gid: 0,
    hostname: "oracle",
    network: "none",
  });
}
