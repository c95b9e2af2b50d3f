// workspace-diff: the one implementation of "what did the agent change", for every backend (the
// runner on the host for local and podman workers, cline-supervisor inside Nomad workers). Plain
// Node, built-ins only, so the supervisor can ship it next to itself.
//
// The agent controls everything in its workspace, including `.git/`. Host-side git must therefore
// never read the workspace's repository or any configuration the agent could have written:
// - git runs with a throw-away `--git-dir` of ours (mkdtemp, `git init --bare --template=`), whose
//   `objects/info/alternates` names a base object store the caller trusts (the pristine snapshot's,
//   or one sealed before the agent started), and `--work-tree=<workspace>` only as data;
// - a minimal environment: no inherited GIT_*, GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1,
//   HOME an empty directory, and `-c` overrides for every setting that could run something
//   (core.fsmonitor, core.hooksPath, attributes/excludes files);
// - `info/attributes` (highest precedence) neutralises in-tree .gitattributes (no filters, no eol
//   or encoding conversion), and no diff driver or textconv can exist without config;
// - a pre-walk (lstat/readdir only, never following a link, never opening a file) refuses
//   workspaces where git's own walk would block or read outside the workspace (a FIFO as
//   .gitignore, a nested `.git` pointing elsewhere); candidate files are checked before git reads
//   them: FIFOs, sockets, devices, files over the size cap and nested repositories are left out
//   and recorded;
// - the base is the commit the caller names (the snapshot's), never the workspace's HEAD.

import { spawn } from "node:child_process";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
} from "node:fs";
import { lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, posix, resolve } from "node:path";

/** `$GIT_DIR/info/attributes`: overrides every in-tree .gitattributes (git 2.39 honours each). */
export const NEUTRAL_ATTRIBUTES = "* -text -filter -ident !eol !diff !merge !working-tree-encoding\n";
/** Files larger than this are left out of the diff (and recorded). */
export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;
/** Once the files git would read add up to this, further files are left out (and recorded). */
export const DEFAULT_MAX_TOTAL_BYTES = 256 * 1024 * 1024;
/** At most this many excluded paths are listed; `excludedTotal` counts them all. */
export const MAX_EXCLUDED_LISTED = 200;

/** Every setting that could make git run a program or read a file we did not choose. */
const CONFIG = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "core.attributesFile=/dev/null",
  "core.excludesFile=/dev/null",
  "core.autocrlf=false",
  "core.safecrlf=false",
  "core.symlinks=true",
  "core.filemode=true",
  "core.ignorecase=false",
  "core.precomposeunicode=false",
  "core.untrackedCache=false",
  "core.splitIndex=false",
  "core.sparseCheckout=false",
  "core.quotepath=false",
  "core.bare=false",
  "index.sparse=false",
  "diff.noprefix=false",
  "diff.mnemonicPrefix=false",
  "diff.relative=false",
].flatMap((c) => ["-c", c]);

const HEX = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** Directories read at once by the pre-walk. */
const WALK_CONCURRENCY = 8;
/** Names git opens in a directory it walks: they must be files or links (links are not followed). */
const OPENED_BY_GIT = new Set([".gitignore", ".gitattributes", ".gitmodules"]);

export class WorkspaceDiffError extends Error {
  /**
   * @param {"E_DIFF_UNSAFE"|"E_DIFF_BASE"|"E_DIFF_GIT"|"E_DIFF_ARGUMENT"} code
   * @param {string} message
   * @param {string} [hint]
   */
  constructor(code, message, hint) {
    super(message);
    this.name = "WorkspaceDiffError";
    this.code = code;
    this.hint = hint;
  }
}

const unsafe = (path, why) =>
  new WorkspaceDiffError(
    "E_DIFF_UNSAFE",
    `workspace entry '${shown(path)}' ${why}: the diff cannot be taken safely`,
    "the agent left something in its workspace that git must not read; the trajectory's diff is empty",
  );

/** Paths from git are bytes: we carry them as latin1 strings (one char per byte) end to end. */
const bytePath = (root, rel) => Buffer.concat([Buffer.from(`${root}/`), Buffer.from(rel, "latin1")]);
/** A byte-string path as text for messages and manifests. */
const shown = (rel) => Buffer.from(rel, "latin1").toString("utf8");

/** The kind of an lstat result. */
function kindOf(st) {
  if (st.isFile()) return "file";
  if (st.isDirectory()) return "dir";
  if (st.isSymbolicLink()) return "symlink";
  if (st.isFIFO()) return "fifo";
  if (st.isSocket()) return "socket";
  return "device";
}

/**
 * What `root/rel` is, without following any link: `beyond-symlink` when a leading component is not
 * a real directory (git treats the path as gone), `missing` when it does not exist.
 * @returns {Promise<{kind: string, size?: number}>}
 */
export async function probePath(root, rel) {
  const parts = rel.split("/");
  for (let i = 0; i < parts.length; i++) {
    const at = bytePath(root, parts.slice(0, i + 1).join("/"));
    let st;
    try {
      st = await lstat(at);
    } catch (err) {
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return { kind: "missing" };
      throw err;
    }
    const kind = kindOf(st);
    if (i < parts.length - 1) {
      if (kind !== "dir") return { kind: kind === "symlink" ? "beyond-symlink" : "missing" };
      continue;
    }
    return kind === "file" ? { kind, size: st.size } : { kind };
  }
  return { kind: "missing" };
}

/**
 * Decides what happens to one candidate path (pure). `tracked` is its base entry (mode) or
 * undefined for an untracked path; `probe` what is in the workspace now; `budget` the bytes left.
 * @returns {{action: "update"|"remove"|"keep", reason?: string, bytes?: number}}
 */
export function planEntry(path, tracked, probe, limits) {
  if (tracked?.mode === "160000") return { action: "keep" }; // submodules are not collected
  if (!tracked && path.endsWith("/"))
    return { action: "keep", reason: "nested git repository (not collected)" };
  switch (probe.kind) {
    case "missing":
    case "beyond-symlink":
    case "dir":
      return { action: tracked ? "remove" : "keep" };
    case "symlink":
      return { action: "update", bytes: 0 };
    case "file":
      if (probe.size > limits.maxFileBytes)
        return { action: "keep", reason: `larger than ${limits.maxFileBytes} bytes (${probe.size})` };
      if (probe.size > limits.budget)
        return { action: "keep", reason: `over the diff's total size cap of ${limits.maxTotalBytes} bytes` };
      return { action: "update", bytes: probe.size };
    default:
      return { action: "keep", reason: `a ${probe.kind}, not a file` };
  }
}

/**
 * Walks the workspace (readdir + lstat, never following links, never opening files) and throws
 * E_DIFF_UNSAFE where git's own walk would block or leave the workspace. Returns the FIFOs,
 * sockets and devices it saw (git leaves them out; they are recorded as excluded).
 */
export async function preWalk(workspace, deadline) {
  const specials = [];
  const queue = [""];
  const visit = async (dir) => {
    let entries;
    try {
      entries = await readdir(dir ? bytePath(workspace, dir) : workspace, {
        withFileTypes: true,
        encoding: "buffer",
      });
    } catch (err) {
      if (err.code === "ENOENT" || err.code === "ENOTDIR" || err.code === "EACCES") return;
      throw err;
    }
    for (const e of entries) {
      const name = e.name.toString("latin1");
      const rel = dir ? `${dir}/${name}` : name;
      if (name === ".git") {
        if (dir === "") continue; // the workspace's own repository: git never looks at it here
        await checkNestedGit(workspace, rel);
        continue;
      }
      if (e.isDirectory()) queue.push(rel);
      else if (!e.isFile() && !e.isSymbolicLink()) {
        if (OPENED_BY_GIT.has(name)) throw unsafe(rel, "is not a regular file");
        const kind = e.isFIFO() ? "fifo" : e.isSocket() ? "socket" : "device";
        specials.push({ path: shown(rel), reason: `a ${kind}, not a file` });
      }
    }
  };
  // A few directories at a time: readdir runs on libuv's thread pool.
  const worker = async () => {
    while (queue.length > 0) {
      if (Date.now() > deadline)
        throw new WorkspaceDiffError("E_DIFF_GIT", "timed out walking the workspace");
      await visit(queue.pop());
    }
  };
  while (queue.length > 0)
    await Promise.all(Array.from({ length: Math.min(WALK_CONCURRENCY, queue.length) }, worker));
  return specials;
}

/** A nested `.git` that git's walk will probe: it must stay inside the workspace and not block. */
async function checkNestedGit(workspace, rel) {
  const st = await lstat(bytePath(workspace, rel));
  if (st.isDirectory()) return checkGitDirFiles(workspace, rel);
  if (!st.isFile()) throw unsafe(rel, "is neither a directory nor a file");
  if (st.size > 4096) throw unsafe(rel, "is a gitfile larger than 4 KiB");
  const text = readContained(workspace, rel, { maxBytes: 4096 });
  if (text.kind !== "file") throw unsafe(rel, `cannot be read safely (${text.reason ?? text.kind})`);
  const m = /^gitdir: (.+?)\r?\n?$/.exec(text.data.toString("latin1"));
  if (!m) return; // not a gitfile: git ignores it
  const target = posix.normalize(posix.join(posix.dirname(rel), m[1]));
  if (isAbsolute(m[1]) || target.startsWith("../") || target === "..")
    throw unsafe(rel, `points outside the workspace (${m[1]})`);
  const probe = await probePath(workspace, target);
  if (probe.kind === "missing") return;
  if (probe.kind !== "dir") throw unsafe(rel, `points at ${target}, which is a ${probe.kind}`);
  return checkGitDirFiles(workspace, target);
}

/** Files git opens (following links) when it asks whether `rel` is a repository. */
async function checkGitDirFiles(workspace, rel) {
  for (const name of ["HEAD", "commondir"]) {
    const p = await probePath(workspace, `${rel}/${name}`);
    if (p.kind !== "file" && p.kind !== "missing") throw unsafe(`${rel}/${name}`, `is a ${p.kind}`);
  }
}

/**
 * Reads `root/rel` without following any link or leaving `root`: each leading component must be a
 * real directory, the file is opened with O_NOFOLLOW|O_NONBLOCK, must be a regular file within
 * `maxBytes`, and (where /proc is mounted) the opened file's real path must lie under `root`.
 * `rel` is a byte string (latin1; plain ASCII names are the same either way).
 * @returns {{kind: "file", data: Buffer} | {kind: "missing"} | {kind: "refused", reason: string}}
 */
export function readContained(root, rel, { maxBytes }) {
  const parts = rel.split("/");
  if (parts.some((p) => p === "" || p === "." || p === ".."))
    return { kind: "refused", reason: `'${rel}' is not a plain relative path` };
  for (let i = 0; i < parts.length - 1; i++) {
    let st;
    try {
      st = lstatSync(bytePath(root, parts.slice(0, i + 1).join("/")));
    } catch (err) {
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return { kind: "missing" };
      throw err;
    }
    if (!st.isDirectory())
      return { kind: "refused", reason: `${shown(parts[i])} is a ${kindOf(st)}, not a directory` };
  }
  let fd;
  try {
    fd = openSync(bytePath(root, rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") return { kind: "missing" };
    if (err.code === "ELOOP") return { kind: "refused", reason: "a symbolic link" };
    if (err.code === "ENXIO") return { kind: "refused", reason: "a socket" };
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: "refused", reason: `a ${kindOf(st)}, not a file` };
    if (st.size > maxBytes) return { kind: "refused", reason: `larger than ${maxBytes} bytes (${st.size})` };
    const real = realPathOfFd(fd);
    const top = realpathSync(root);
    if (real !== undefined && !real.startsWith(`${top}/`))
      return { kind: "refused", reason: "resolves outside its directory" };
    const buf = Buffer.alloc(st.size);
    let n = 0;
    while (n < st.size) {
      const r = readSync(fd, buf, n, st.size - n, n);
      if (r === 0) break;
      n += r;
    }
    return { kind: "file", data: buf.subarray(0, n) };
  } finally {
    closeSync(fd);
  }
}

function realPathOfFd(fd) {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

/** A git environment with nothing inherited but PATH. */
function gitEnv(home, index) {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    LC_ALL: "C",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    ...(index ? { GIT_INDEX_FILE: index } : {}),
  };
}

/**
 * Runs git bounded by `deadline` (SIGKILL when it passes or `signal` aborts).
 * @returns {Promise<Buffer>} stdout
 */
function runGit(ctx, args, input) {
  const left = ctx.deadline - Date.now();
  if (left <= 0)
    return Promise.reject(new WorkspaceDiffError("E_DIFF_GIT", `timed out before git ${args[0]}`));
  return new Promise((resolvePromise, reject) => {
    const child = spawn(ctx.git, [...ctx.prefix, ...args], {
      cwd: ctx.scratch,
      env: ctx.env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      timeout: left,
      killSignal: "SIGKILL",
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    const out = [];
    const err = [];
    let outBytes = 0;
    child.stdout.on("data", (c) => {
      outBytes += c.length;
      if (outBytes > ctx.maxOutputBytes) child.kill("SIGKILL");
      else out.push(c);
    });
    child.stderr.on("data", (c) => err.push(c));
    if (input !== undefined) {
      child.stdin.on("error", () => {});
      child.stdin.end(Buffer.from(input, "latin1"));
    }
    child.on("error", (e) =>
      reject(
        e.name === "AbortError" ? e : new WorkspaceDiffError("E_DIFF_GIT", `could not run git: ${e.message}`),
      ),
    );
    child.on("close", (code, sig) => {
      if (ctx.signal?.aborted) return reject(ctx.signal.reason);
      if (code === 0) return resolvePromise(Buffer.concat(out));
      const why =
        outBytes > ctx.maxOutputBytes
          ? `its output passed ${ctx.maxOutputBytes} bytes`
          : sig
            ? `killed by ${sig}${Date.now() >= ctx.deadline ? " (time limit)" : ""}`
            : `exit ${code}`;
      reject(
        new WorkspaceDiffError(
          "E_DIFF_GIT",
          `git ${args[0]} failed (${why}): ${Buffer.concat(err).toString("utf8").trim().slice(-2000)}`,
        ),
      );
    });
  });
}

const split0 = (buf) =>
  buf
    .toString("latin1")
    .split("\0")
    .filter((s) => s !== "");

/**
 * Creates our own bare repository in `dir` whose objects come from `baseObjects` (alternates).
 */
async function initRepo(git, scratch, baseObjects, deadline, signal) {
  const repo = join(scratch, "repo.git");
  const home = join(scratch, "home");
  await mkdir(home);
  const env = gitEnv(home);
  const ctx = { git, scratch, env, prefix: [], deadline, signal, maxOutputBytes: 1 << 20 };
  await runGit(ctx, ["init", "-q", "--bare", "--template=", repo]);
  await mkdir(join(repo, "objects", "info"), { recursive: true });
  await mkdir(join(repo, "info"), { recursive: true });
  await writeFile(join(repo, "objects", "info", "alternates"), `${baseObjects}\n`);
  await writeFile(join(repo, "info", "attributes"), NEUTRAL_ATTRIBUTES);
  return repo;
}

/** The base object store must be a real directory that borrows from nowhere else. */
async function checkBaseObjects(baseObjects) {
  const fail = (why) =>
    new WorkspaceDiffError(
      "E_DIFF_BASE",
      `base objects ${baseObjects} ${why}`,
      "pass the pristine snapshot's .git/objects (or a store sealed before the agent started)",
    );
  if (!isAbsolute(baseObjects) || baseObjects.includes("\n")) throw fail("is not an absolute path");
  const st = await lstat(baseObjects).catch(() => undefined);
  if (!st?.isDirectory()) throw fail("is not a directory");
  for (const f of ["info/alternates", "info/http-alternates"]) {
    if (await lstat(join(baseObjects, f)).catch(() => undefined))
      throw fail(`has ${f}: a trusted store borrows from nowhere`);
  }
}

/**
 * The workspace's changes against `baseCommit` as a binary-safe patch (untracked, not ignored
 * files included), computed with a repository of ours; see the file header.
 * @returns {Promise<{patch: Buffer, baseCommit: string, excluded: {path: string, reason: string}[], excludedTotal: number}>}
 */
export async function workspaceDiff(options) {
  return await withWorkspaceIndex(options, {}, async (ctx, o, excluded) => {
    const patch = await runGit(ctx, [
      "diff",
      "--cached",
      "--binary",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      "--ignore-submodules=all",
      o.baseCommit,
      "--",
    ]);
    return {
      patch,
      baseCommit: o.baseCommit,
      excluded: excluded.slice(0, MAX_EXCLUDED_LISTED),
      excludedTotal: excluded.length,
    };
  });
}

/**
 * Commits the workspace's tree as workspaceDiff sees it (untracked, not ignored files included,
 * the same files left out) on top of `baseCommit`, with `identity` as author and committer, and
 * writes the new objects into `baseObjects` — so call it only while the workspace is still ours
 * (a snapshot build after its install step, before any agent ran). Its `.git/HEAD` then names the
 * new commit (detached) and `.git/index` matches it, written as files, never by git reading the
 * workspace's repository. An unchanged tree keeps `baseCommit`.
 * @returns {Promise<{commit: string, changed: string[], excluded: {path: string, reason: string}[], excludedTotal: number}>}
 */
export async function commitWorkspace(options) {
  const { identity, message } = options;
  // checked before any object is written: a linked .git would send them (and HEAD) elsewhere
  const gitDir = await ownGitDir(options.workspace);
  const env = {
    GIT_OBJECT_DIRECTORY: options.baseObjects,
    GIT_AUTHOR_NAME: identity.name,
    GIT_AUTHOR_EMAIL: identity.email,
    GIT_AUTHOR_DATE: identity.date,
    GIT_COMMITTER_NAME: identity.name,
    GIT_COMMITTER_EMAIL: identity.email,
    GIT_COMMITTER_DATE: identity.date,
  };
  return await withWorkspaceIndex(options, env, async (ctx, o, excluded) => {
    const listed = excluded.slice(0, MAX_EXCLUDED_LISTED);
    const names = await runGit(ctx, [
      "diff",
      "--cached",
      "--name-only",
      "-z",
      "--no-renames",
      o.baseCommit,
      "--",
    ]);
    const changed = split0(names).map(shown).sort();
    if (changed.length === 0)
      return { commit: o.baseCommit, changed, excluded: listed, excludedTotal: excluded.length };
    const tree = (await runGit(ctx, ["write-tree"])).toString("latin1").trim();
    const commit = (await runGit(ctx, ["commit-tree", tree, "-p", o.baseCommit, "-m", message]))
      .toString("latin1")
      .trim();
    await runGit(ctx, ["update-index", "-q", "--refresh"]).catch(() => undefined);
    await setHead(gitDir, commit, join(ctx.scratch, "index"));
    return { commit, changed, excluded: listed, excludedTotal: excluded.length };
  });
}

/** The workspace's `.git`, which must be a real directory (not a link, not a gitfile). */
async function ownGitDir(workspace) {
  if (!workspace || !isAbsolute(workspace))
    throw new WorkspaceDiffError("E_DIFF_ARGUMENT", `workspace '${workspace}' must be an absolute path`);
  const gitDir = join(resolve(workspace), ".git");
  if (!(await lstat(gitDir).catch(() => undefined))?.isDirectory())
    throw new WorkspaceDiffError(
      "E_DIFF_UNSAFE",
      `${gitDir} is not a directory (a link, a gitfile or missing)`,
    );
  return gitDir;
}

/** Points the repository at `gitDir` to `commit` (detached) with `index` as its index. */
async function setHead(gitDir, commit, index) {
  for (const [name, data] of [
    ["index", await readFile(index)],
    ["HEAD", `${commit}\n`],
  ]) {
    const tmp = join(gitDir, `${name}.flakegym-${process.pid}`);
    await rm(tmp, { force: true });
    await writeFile(tmp, data, { flag: "wx" });
    await rename(tmp, join(gitDir, name));
  }
}

/**
 * Checks the arguments, makes our repository and an index of the workspace's files against
 * `baseCommit` (the base's entries updated from the workspace, untracked files added), then runs
 * `body(ctx, options, excluded)` on it; the scratch repository is removed afterwards.
 */
async function withWorkspaceIndex(options, extraEnv, body) {
  const o = {
    git: "git",
    timeoutMs: 60_000,
    maxFileBytes: DEFAULT_MAX_FILE_BYTES,
    maxTotalBytes: DEFAULT_MAX_TOTAL_BYTES,
    ...options,
  };
  if (!o.workspace || !isAbsolute(o.workspace))
    throw new WorkspaceDiffError("E_DIFF_ARGUMENT", `workspace '${o.workspace}' must be an absolute path`);
  if (!HEX.test(o.baseCommit ?? ""))
    throw new WorkspaceDiffError(
      "E_DIFF_ARGUMENT",
      `base commit '${o.baseCommit}' is not a full commit id`,
      "pass the snapshot's commit (its manifest's `commit`), never a ref the agent could move",
    );
  const workspace = resolve(o.workspace);
  if (!(await lstat(workspace).catch(() => undefined))?.isDirectory())
    throw new WorkspaceDiffError("E_DIFF_ARGUMENT", `workspace ${workspace} is not a directory`);
  await checkBaseObjects(o.baseObjects);
  const deadline = Date.now() + o.timeoutMs;
  const scratch = await mkdtemp(join(o.scratchDir ?? tmpdir(), "flakegym-diff-"));
  try {
    const repo = await initRepo(o.git, scratch, o.baseObjects, deadline, o.signal);
    const ctx = {
      git: o.git,
      scratch,
      env: { ...gitEnv(join(scratch, "home"), join(scratch, "index")), ...extraEnv },
      prefix: [`--git-dir=${repo}`, `--work-tree=${workspace}`, ...CONFIG],
      deadline,
      signal: o.signal,
      maxOutputBytes: 4 * o.maxTotalBytes,
    };
    await runGit(ctx, ["cat-file", "-e", `${o.baseCommit}^{commit}`]).catch((err) => {
      throw new WorkspaceDiffError(
        "E_DIFF_BASE",
        `base commit ${o.baseCommit} is not in ${o.baseObjects} (${err.message})`,
        "the base objects must hold the snapshot's commit",
      );
    });
    const specials = await preWalk(workspace, deadline);
    await runGit(ctx, ["read-tree", o.baseCommit]);
    const plan = await planIndex(ctx, workspace, o);
    const seen = new Set(plan.excluded.map((e) => e.path));
    plan.excluded.push(...specials.filter((e) => !seen.has(e.path)));
    if (plan.remove.length > 0)
      await runGit(ctx, ["update-index", "-z", "--force-remove", "--stdin"], plan.remove.join("\0"));
    if (plan.update.length > 0)
      await runGit(ctx, ["update-index", "-z", "--add", "--stdin"], plan.update.join("\0"));
    return await body(ctx, { ...o, workspace }, plan.excluded);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Lists the candidates (base entries + untracked, not ignored files) and plans each. */
async function planIndex(ctx, workspace, o) {
  const tracked = new Map();
  for (const line of split0(await runGit(ctx, ["ls-files", "-z", "-s"]))) {
    const tab = line.indexOf("\t");
    tracked.set(line.slice(tab + 1), { mode: line.slice(0, line.indexOf(" ")) });
  }
  const untracked = split0(await runGit(ctx, ["ls-files", "-z", "-o", "--exclude-standard"]));
  const plan = { update: [], remove: [], excluded: [] };
  const limits = { maxFileBytes: o.maxFileBytes, maxTotalBytes: o.maxTotalBytes, budget: o.maxTotalBytes };
  for (const [path, entry] of [...tracked, ...untracked.map((p) => [p, undefined])]) {
    const probe = path.endsWith("/") ? { kind: "dir" } : await probePath(workspace, path);
    const d = planEntry(path, entry, probe, limits);
    if (d.reason) plan.excluded.push({ path: shown(path), reason: d.reason });
    if (d.action === "update") {
      plan.update.push(path);
      limits.budget -= d.bytes ?? 0;
    } else if (d.action === "remove") plan.remove.push(path);
  }
  return plan;
}

/**
 * Copies `baseCommit` and everything it reaches from `sourceObjects` into a self-contained bare
 * repository at `dir` (created), so later diffs need nothing the agent can change. For workers
 * whose only copy of the base lives in the agent's workspace (cline-supervisor): seal it at start.
 * @returns {Promise<string>} `<dir>/objects`
 */
export async function sealBase({ sourceObjects, baseCommit, dir, git = "git", timeoutMs = 120_000 }) {
  if (!HEX.test(baseCommit ?? ""))
    throw new WorkspaceDiffError("E_DIFF_ARGUMENT", `base commit '${baseCommit}' is not a full commit id`);
  const scratch = await mkdtemp(join(dirname(dir), ".flakegym-seal-"));
  try {
    const deadline = Date.now() + timeoutMs;
    await mkdir(join(scratch, "home"));
    const env = gitEnv(join(scratch, "home"));
    const base = { git, scratch, env, prefix: [], deadline, maxOutputBytes: 1 << 20 };
    await runGit(base, ["init", "-q", "--bare", "--template=", dir]);
    const ctx = { ...base, prefix: [`--git-dir=${dir}`, ...CONFIG] };
    await mkdir(join(dir, "objects", "info"), { recursive: true });
    await writeFile(join(dir, "objects", "info", "alternates"), `${sourceObjects}\n`);
    // Only the base's tree is needed, never its history (a snapshot may be a shallow clone).
    await writeFile(join(dir, "shallow"), `${baseCommit}\n`);
    await runGit(ctx, ["update-ref", "refs/flakegym/base", baseCommit]);
    await runGit(ctx, ["repack", "-a", "-d", "-q"]);
    await rm(join(dir, "objects", "info", "alternates"));
    await runGit(ctx, ["cat-file", "-e", `${baseCommit}^{tree}`]);
    return join(dir, "objects");
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The commit `repo`'s HEAD names, read as data (no git, no config): `.git/HEAD`, then the loose
 * ref or `packed-refs`. Undefined when there is none.
 */
export function readHead(repo) {
  const read = (rel) => {
    const r = readContained(repo, rel, { maxBytes: 1 << 20 });
    return r.kind === "file" ? r.data.toString("utf8") : undefined;
  };
  const head = read(".git/HEAD")?.trim();
  if (!head) return undefined;
  if (HEX.test(head)) return head;
  const m = /^ref: (refs\/[A-Za-z0-9._/-]+)$/.exec(head);
  if (!m || m[1].split("/").some((p) => p === ".." || p === "." || p === "")) return undefined;
  const loose = read(`.git/${m[1]}`)?.trim();
  if (loose && HEX.test(loose)) return loose;
  for (const line of (read(".git/packed-refs") ?? "").split("\n")) {
    const [id, name] = line.split(" ");
    if (name === m[1] && HEX.test(id ?? "")) return id;
  }
  return undefined;
}
