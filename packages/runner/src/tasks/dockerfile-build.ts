import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { lstat, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { holdHarborTree } from "../gc/harbor-tree-use.js";
import { type DebianBase, DONE_MARK, ensureDebianBase, servedByText } from "./debian-base.js";
import { type BuildPlan, type BuildStep, IMAGE_PATH } from "./dockerfile-plan.js";
import { goImageVersion, installGoToolchain } from "./go-toolchain.js";
import { uvFromPypi } from "./uv-image.js";

/**
 * A Dockerfile's plan (dockerfile-plan.ts) run on a copy of its Debian base: each `RUN` in a
 * bubblewrap chroot of the tree (root inside, the host's network shared — at build time only — and
 * its resolv.conf bound), `COPY`/`ADD` done inside that chroot too (so no path of the tree is
 * resolved on the host, where an absolute symbolic link would point at the host's own files),
 * `ENV`/`WORKDIR`/`USER` carried from line to line; `ENTRYPOINT`/`CMD` recorded. The finished tree
 * is cached by content (the base's key, the plan, the build context's files).
 */

/** The Docker default PATH (and HOME for root). */
export const DOCKER_PATH = IMAGE_PATH;

/** Where the machine's CA bundle is shown during the build, and the variables that point TLS clients at it. */
export const HOST_CA = "/.flakegym-host-ca.crt";
const CA_VARS = ["SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"];

/** This machine's CA bundle: `$SSL_CERT_FILE`, `$PIP_CERT`, else Debian's. */
export function hostCaBundle(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const c of [env.SSL_CERT_FILE, env.PIP_CERT, "/etc/ssl/certs/ca-certificates.crt"])
    if (c && existsSync(c)) return c;
  return undefined;
}

/** What the build records beside the tree (`.flakegym-rootfs.json`). */
export interface BuiltRootfs {
  readonly dir: string;
  readonly key: string;
  readonly baseKey: string;
  /** "FROM ubuntu:24.04 served by debian bookworm mmdebstrap <key> (…)". */
  readonly servedBy: string;
  readonly workdir: string;
  readonly user: string;
  readonly env: Readonly<Record<string, string>>;
  readonly entrypoint?: readonly string[];
  readonly cmd?: readonly string[];
  readonly builtMs?: number;
}

/**
 * The capabilities a RUN line keeps (it runs as root in the host's network namespace): what
 * package installs need (file ownership and modes, switching users as apt and dpkg do) and nothing
 * that reaches past the tree — no CAP_SYS_ADMIN (mounts), CAP_NET_ADMIN / CAP_NET_RAW /
 * CAP_NET_BIND_SERVICE (the host's network), CAP_MKNOD (a device node of the host's disk),
 * CAP_SYS_PTRACE, CAP_SYS_MODULE. Docker's default set, less its network and device ones.
 */
export const BUILD_CAPS: readonly string[] = [
  "CAP_CHOWN",
  "CAP_DAC_OVERRIDE",
  "CAP_FSETID",
  "CAP_FOWNER",
  "CAP_SETGID",
  "CAP_SETUID",
  "CAP_SETFCAP",
  "CAP_SETPCAP",
  "CAP_SYS_CHROOT",
  "CAP_KILL",
  "CAP_AUDIT_WRITE",
];

/** The argv that runs `shell` as `user` in the chroot at `rootfs` (network shared, build time only). Pure. */
export function chrootArgs(o: {
  rootfs: string;
  cwd: string;
  env: Readonly<Record<string, string>>;
  user: string;
  shell: string;
  /** The Dockerfile's SHELL (argv before the command); default `/bin/sh -c`. */
  shellArgv?: readonly string[];
  context?: string;
  /** This machine's CA bundle (its TLS to the registries may pass a proxy with its own CA), build time only. */
  hostCa?: string;
}): string[] {
  const a = ["--bind", o.rootfs, "/", "--proc", "/proc", "--dev", "/dev"];
  a.push("--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf");
  if (o.context) a.push("--ro-bind", o.context, "/.flakegym-context");
  if (o.hostCa) a.push("--ro-bind", o.hostCa, HOST_CA);
  a.push("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session");
  a.push("--cap-drop", "ALL", ...BUILD_CAPS.flatMap((c) => ["--cap-add", c]));
  a.push("--chdir", o.cwd, "--clearenv");
  const ca = o.hostCa ? Object.fromEntries(CA_VARS.map((k) => [k, HOST_CA])) : {};
  const env = {
    PATH: DOCKER_PATH,
    HOME: o.user === "root" || o.user === "0" ? "/root" : "/",
    ...ca,
    ...o.env,
  };
  for (const [k, v] of Object.entries(env)) a.push("--setenv", k, v);
  a.push("--");
  if (o.user !== "root" && o.user !== "0") {
    const [u, g] = o.user.split(":");
    a.push(
      "setpriv",
      `--reuid=${u}`,
      g ? `--regid=${g}` : `--regid=${u}`,
      g ? "--clear-groups" : "--init-groups",
    );
  }
  a.push(...(o.shellArgv ?? ["/bin/sh", "-c"]), o.shell);
  return a;
}

/** Single-quoted for sh. Pure. */
const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/** The shell line that does one COPY inside the chroot (context at /.flakegym-context). Pure. */
export function copyShell(step: Extract<BuildStep, { kind: "copy" }>, srcIsDir: readonly boolean[]): string {
  const lines: string[] = [];
  const targets: string[] = [];
  step.sources.forEach((src, i) => {
    const from = `/.flakegym-context/${src === "." ? "" : src}`;
    if (srcIsDir[i]) {
      lines.push(`mkdir -p ${q(step.dest)} && cp -a ${q(`${from}/.`)} ${q(step.dest)}/`);
      targets.push(step.dest);
    } else {
      const to = step.intoDir ? `${step.dest}/${src.split("/").pop()}` : step.dest;
      lines.push(`mkdir -p ${q(to.replace(/\/[^/]*$/, "") || "/")} && cp -a ${q(from)} ${q(to)}`);
      targets.push(to);
    }
  });
  const owner = step.chown ?? "0:0";
  lines.push(`chown -R ${q(owner)} ${targets.map(q).join(" ")}`);
  if (step.chmod) lines.push(`chmod -R ${q(step.chmod)} ${targets.map(q).join(" ")}`);
  return lines.join(" && ");
}

/** A content hash of the build context (every path, mode and file's bytes, sorted). */
async function contextHash(dir: string): Promise<string> {
  const h = createHash("sha256");
  const walk = async (rel: string): Promise<void> => {
    const entries = (await readdir(join(dir, rel), { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    );
    for (const e of entries) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      const st = await lstat(join(dir, p));
      h.update(`${p}\0${st.mode}\0`);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) h.update(await readFile(join(dir, p)));
    }
  };
  await walk("");
  return h.digest("hex");
}

/** The build's key: the base's key, the plan and the context's content. */
export function rootfsKey(baseKey: string, plan: BuildPlan, context: string): string {
  return createHash("sha256")
    .update(JSON.stringify({ v: 1, baseKey, plan, context }))
    .digest("hex")
    .slice(0, 16);
}

/** Runs one step on the tree; returns the state for the next, or throws naming the line. */
async function runStep(
  step: BuildStep,
  st: {
    rootfs: string;
    context: string;
    cwd: string;
    user: string;
    env: Record<string, string>;
    hostCa?: string;
  },
  signal: AbortSignal,
): Promise<void> {
  const exec = async (
    shell: string,
    user: string,
    what: string,
    context = st.context,
    shellArgv?: readonly string[],
  ) => {
    const r = await execa(
      "bwrap",
      chrootArgs({
        rootfs: st.rootfs,
        cwd: st.cwd,
        env: st.env,
        user,
        shell,
        context,
        ...(shellArgv ? { shellArgv } : {}),
        ...(st.hostCa ? { hostCa: st.hostCa } : {}),
      }),
      {
        reject: false,
        cancelSignal: signal,
        stdin: "ignore",
        all: true,
      },
    );
    if (r.exitCode !== 0) {
      const tail = (r.all ?? "").split("\n").slice(-10).join("\n");
      throw new Error(
        `environment/Dockerfile line ${step.line}: ${what} failed (exit ${r.exitCode ?? "signal"}):\n${tail}`,
      );
    }
  };
  switch (step.kind) {
    case "env":
      st.env[step.name] = step.value;
      return;
    case "user":
      st.user = step.user;
      return;
    case "workdir":
      await exec(`mkdir -p ${q(step.path)}`, "root", `WORKDIR ${step.path}`);
      st.cwd = step.path;
      return;
    case "run":
      await exec(step.shell, st.user, `RUN ${step.shell.slice(0, 80)}`, st.context, step.shellArgv);
      return;
    case "copy": {
      if (step.uv !== undefined) return await uvCopy(step, signal, exec);
      const isDir = await Promise.all(
        step.sources.map(async (s) => {
          const p = join(st.context, s);
          if (!existsSync(p))
            throw new Error(
              `environment/Dockerfile line ${step.line}: COPY source '${s}' is not in the build context`,
            );
          return (await stat(p)).isDirectory();
        }),
      );
      await exec(copyShell(step, isDir), "root", `COPY ${step.sources.join(" ")} ${step.dest}`);
      return;
    }
  }
}

/** A copy from uv's image: its two binaries from PyPI's wheel (uv-image.ts), copied inside the chroot like any COPY. */
async function uvCopy(
  step: Extract<BuildStep, { kind: "copy" }>,
  signal: AbortSignal,
  exec: (shell: string, user: string, what: string, context?: string) => Promise<void>,
): Promise<void> {
  const uv = await uvFromPypi(step.uv!, signal);
  try {
    const what = `COPY --from uv's image (served by PyPI's ${uv.wheel}) ${step.sources.join(" ")} ${step.dest}`;
    await exec(
      copyShell(
        step,
        step.sources.map(() => false),
      ),
      "root",
      what,
      uv.context,
    );
  } finally {
    await rm(uv.dir, { recursive: true, force: true });
  }
}

/** The bound on a tree's stand-in for the image (the Debian base, Go's distribution), at least. */
const IMAGE_PREP_MS = 30 * 60_000;

/** This machine's Debian architecture (the base's, built from its apt sources). */
async function dpkgArch(): Promise<string> {
  return (await execa("dpkg", ["--print-architecture"], { timeout: 10_000 })).stdout.trim();
}

/** How often a running build step says it is still running. */
const STEP_PROGRESS_MS = 60_000;

/**
 * The Dockerfile's steps, each bounded by its own `stepMs` (environment.build_timeout_sec): Harbor
 * bounds the whole build by it, but one network install on a loaded shared machine can take what a
 * whole build takes on an idle one, so a build that keeps finishing steps is not cut by one wall
 * clock over all of them. A running RUN or COPY says it is still running every minute, and each
 * says how long it took.
 */
async function runSteps(
  steps: readonly BuildStep[],
  st: Parameters<typeof runStep>[1],
  o: { signal?: AbortSignal; stepMs: number; log?: (line: string) => void },
): Promise<void> {
  for (const step of steps) {
    const shown = step.kind === "run" || step.kind === "copy";
    const what = `line ${step.line}: ${step.kind.toUpperCase()}`;
    if (shown) o.log?.(`  ${what}`);
    const started = Date.now();
    const tick = shown
      ? setInterval(() => o.log?.(`  ${what} still running (${secondsSince(started)} s)`), STEP_PROGRESS_MS)
      : undefined;
    using d = createDeadline({
      signals: [o.signal],
      timeout: { ms: o.stepMs, limit: "environment.build_timeout_sec (per step)" },
    });
    try {
      await runStep(step, st, d.signal);
    } catch (err) {
      if (d.expired) throw new Error(stepTimeoutMessage(step.line, o.stepMs, (err as Error).message));
      throw err;
    } finally {
      clearInterval(tick);
    }
    if (shown && Date.now() - started >= 10_000) o.log?.(`  ${what} done in ${secondsSince(started)} s`);
  }
}

const secondsSince = (t: number) => Math.round((Date.now() - t) / 1000);

/** The error of a build step cut by its bound, naming the line, the bound and what to do. Pure. */
export function stepTimeoutMessage(line: number, stepMs: number, cause: string): string {
  return `environment/Dockerfile line ${line} ran past ${Math.round(stepMs / 1000)} s, environment.build_timeout_sec, which bounds each step here: raise build_timeout_sec in task.toml if the step needs longer on this machine (${cause})`;
}

/**
 * The root filesystem of a Dockerfile's plan: its Debian base (built or cached), copied, the steps
 * run on the copy; cached by content under `<cache>/harbor-rootfs/<key>`. Needs root and bwrap.
 */
export async function buildRootfs(
  plan: BuildPlan,
  base: DebianBase,
  o: {
    context: string;
    cacheRoot: string;
    timeoutMs: number;
    signal?: AbortSignal;
    log?: (line: string) => void;
  },
): Promise<BuiltRootfs> {
  // the base (and Go's distribution) stand in for pulling the image, which Harbor's
  // build_timeout_sec does not count: they have a bound of their own
  const prepMs = Math.max(o.timeoutMs, IMAGE_PREP_MS);
  using prep = createDeadline({
    signals: [o.signal],
    timeout: { ms: prepMs, limit: "the image's stand-in (Debian base, Go's distribution)" },
  });
  const b = await ensureDebianBase(base, {
    cacheRoot: o.cacheRoot,
    timeoutMs: prepMs,
    signal: prep.signal,
    log: o.log,
  });
  const key = rootfsKey(b.key, plan, await contextHash(o.context));
  const dir = join(o.cacheRoot, "harbor-rootfs", key);
  // held (flakegym gc leaves it) for as long as this process runs the oracle on it
  if (await holdHarborTree(dir, prep.signal))
    return JSON.parse(await readFile(join(dir, DONE_MARK), "utf8")) as BuiltRootfs;
  const started = Date.now();
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  try {
    await execa("cp", ["-a", b.dir, tmp], { cancelSignal: prep.signal });
    await rm(join(tmp, DONE_MARK), { force: true });
    const go = goImageVersion(plan.image);
    const goFrom =
      go === undefined ? undefined : await installGoToolchain(tmp, go, await dpkgArch(), prep.signal);
    const ca = hostCaBundle();
    const st = {
      rootfs: tmp,
      context: o.context,
      cwd: "/",
      user: "root",
      env: {} as Record<string, string>,
      ...(ca ? { hostCa: ca } : {}),
    };
    // not under prep: the stand-in's bound is not the steps'
    await runSteps(plan.steps, st, { signal: o.signal, stepMs: o.timeoutMs, log: o.log });
    const built: BuiltRootfs = {
      dir,
      key,
      baseKey: b.key,
      servedBy: `${servedByText(plan.image, base, b.key)}${goFrom ? `; ${goFrom} installed` : ""}`,
      workdir: plan.workdir,
      user: plan.user,
      env: plan.env,
      ...(plan.entrypoint ? { entrypoint: plan.entrypoint } : {}),
      ...(plan.cmd ? { cmd: plan.cmd } : {}),
      builtMs: Date.now() - started + (b.builtMs ?? 0),
    };
    // the mount points the build's chroot left (empty) are not the image's
    for (const p of [HOST_CA, "/.flakegym-context"]) await rm(join(tmp, p), { recursive: true, force: true });
    await writeFile(join(tmp, DONE_MARK), `${JSON.stringify(built)}\n`);
    await rename(tmp, dir).catch(async (err: NodeJS.ErrnoException) => {
      await rm(tmp, { recursive: true, force: true });
      if (!existsSync(join(dir, DONE_MARK))) throw err;
    });
    await holdHarborTree(dir, prep.signal);
    return built;
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}
