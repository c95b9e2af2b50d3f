import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";

/**
 * Replays the flake check `checks.<system>.runner-unit-tests` (nix/checks/runner-tests.nix) without
 * Nix: its exact vitest command, in bubblewrap with no network, uid 1000, a root that holds only
 * the check's inputs (node, git, bash, coreutils on PATH; /bin/sh; the shared libraries they load),
 * the sources as nix/source.nix filters them (withTests) and a read-only node_modules. No bwrap,
 * podman, python or compilers exist inside, as in the Nix build sandbox.
 */

/**
 * The check's shell lines from `export …` to the vitest command, with the `projects` list
 * expanded: read from the Nix file, so this replay runs exactly what the check runs.
 */
export function readUnitCheckScript(nixFile: string): string {
  const text = readFileSync(nixFile, "utf8");
  const projects = /projects \? \[([^\]]*)\]/
    .exec(text)?.[1]
    ?.match(/"([^"]+)"/g)
    ?.map((p) => p.slice(1, -1));
  const body = /^\s*(export [\s\S]*?node node_modules\/vitest\/vitest\.mjs run [^\n]*)$/m.exec(text)?.[1];
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a Nix interpolation, read verbatim
  const projectArgs = '${builtins.concatStringsSep " " (map (p: "--project ${p}") projects)}';
  if (!projects?.length || !body?.includes(projectArgs)) {
    throw new Error(
      `${nixFile}: cannot find the check's projects list or its lines from 'export …' to 'node node_modules/vitest/vitest.mjs run ${projectArgs}'; update tests/integration/nix/unit-check-sandbox.ts`,
    );
  }
  const script = body.replace(projectArgs, projects.map((p) => `--project ${p}`).join(" "));
  if (script.includes("${"))
    throw new Error(
      `${nixFile}: the check's script has a Nix interpolation this replay does not know: ${script}`,
    );
  return script
    .split("\n")
    .map((l) => l.trim())
    .join("\n");
}

/** The source filter of nix/source.nix with `withTests = true`. */
const TOP_FILES = [
  "package.json",
  "package-lock.json",
  "tsconfig.base.json",
  "tsconfig.json",
  "vitest.config.ts",
  "biome.json",
  "nx.json",
];
const TOP_DIRS = ["packages", "tests", "scripts"];
const DROPPED = new Set(["node_modules", "dist", ".nx", ".git", "result"]);

export function copyTestSources(root: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const f of TOP_FILES) cpSync(join(root, f), join(dest, f));
  for (const d of TOP_DIRS) {
    cpSync(join(root, d), join(dest, d), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => {
        const rel = relative(root, src);
        const base = rel.split("/").at(-1)!;
        return (
          !DROPPED.has(base) && !base.endsWith(".tsbuildinfo") && !rel.startsWith("packages/profiles/nix")
        );
      },
    });
  }
}

/** Where the read-only node_modules tree is bound, like the check's tree in the Nix store. */
export const STORE_NODE_MODULES = "/store/node_modules";

/**
 * What the check's `nodeModules.linkInto "$PWD"` does (nix/npm-lock-modules.nix): a writable
 * `node_modules` of symlinks into the read-only tree, scoped packages one level down, workspace
 * packages as relative links into the work tree.
 */
export function linkNodeModules(hostNodeModules: string, work: string): void {
  const dest = join(work, "node_modules");
  mkdirSync(dest, { recursive: true });
  for (const name of [...readdirSync(hostNodeModules).filter((n) => !n.startsWith(".")), ".bin"]) {
    if (!existsSync(join(hostNodeModules, name))) continue;
    if (!name.startsWith("@")) {
      symlinkSync(`${STORE_NODE_MODULES}/${name}`, join(dest, name));
      continue;
    }
    mkdirSync(join(dest, name));
    for (const child of readdirSync(join(hostNodeModules, name))) {
      const host = join(hostNodeModules, name, child);
      const workspace = lstatSync(host).isSymbolicLink() && !readlinkSync(host).startsWith("/");
      symlinkSync(
        workspace ? readlinkSync(host) : `${STORE_NODE_MODULES}/${name}/${child}`,
        join(dest, name, child),
      );
    }
  }
}

/** coreutils' programs (the check's `pkgs.coreutils`). */
const COREUTILS =
  "[ b2sum base32 base64 basename basenc cat chcon chgrp chmod chown chroot cksum comm cp csplit cut date dd df dir dircolors dirname du echo env expand expr factor false fmt fold groups head hostid id install join link ln logname ls md5sum mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od paste pathchk pinky pr printenv printf ptx pwd readlink realpath rm rmdir runcon seq sha1sum sha224sum sha256sum sha384sum sha512sum shred shuf sleep sort split stat stdbuf stty sum sync tac tail tee test timeout touch tr true truncate tsort tty uname unexpand uniq unlink users vdir wc who whoami yes".split(
    " ",
  );

/** What `pkgs.runCommand` (stdenvNoCC) puts on PATH besides coreutils and bash: its initialPath. */
const STDENV =
  "find xargs diff cmp sed grep egrep fgrep awk tar gzip gunzip zcat bzip2 xz make patch file".split(" ");

function which(name: string): string | undefined {
  try {
    const p = execFileSync("sh", ["-c", `command -v "$1"`, "sh", name], { encoding: "utf8" }).trim();
    return p.startsWith("/") ? realpathSync(p) : undefined;
  } catch {
    return undefined;
  }
}

/** bwrap arguments for a root holding only the check's inputs, `work` at /build/checkout. */
export function sandboxArgs(o: { work: string; nodeModules: string; etc: string }): string[] {
  const tools = new Map<string, string>([["node", realpathSync(process.execPath)]]);
  for (const n of ["git", "bash", ...COREUTILS, ...STDENV]) {
    const p = which(n);
    if (p) tools.set(n, p);
  }
  const args = ["--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "100", "--die-with-parent"];
  args.push("--tmpfs", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/build");
  // Shared libraries (and git's helpers under lib/git-core); no bin directory of the host.
  for (const d of ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]) {
    if (!existsSync(d)) continue;
    if (lstatSync(d).isSymbolicLink()) args.push("--symlink", readlinkSync(d), d);
    else args.push("--ro-bind", d, d);
  }
  for (const [name, path] of tools) args.push("--ro-bind", path, `/tools/${name}`);
  // bash's bin has `sh` too; the Nix build sandbox itself provides /bin/sh.
  for (const sh of ["/tools/sh", "/bin/sh"]) args.push("--ro-bind", tools.get("bash")!, sh);
  args.push(
    "--ro-bind",
    join(o.etc, "passwd"),
    "/etc/passwd",
    "--ro-bind",
    join(o.etc, "group"),
    "/etc/group",
  );
  args.push("--bind", o.work, "/build/checkout", "--ro-bind", o.nodeModules, STORE_NODE_MODULES);
  args.push("--chdir", "/build/checkout", "--clearenv", "--setenv", "PATH", "/tools");
  args.push("--setenv", "TMPDIR", "/build", "--setenv", "NIX_BUILD_TOP", "/build");
  return args;
}

/** /etc/passwd and /etc/group as the Nix build sandbox has them (nixbld, uid 1000). */
export function writeEtc(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "passwd"),
    "root:x:0:0:Nix build user:/build:/noshell\nnixbld:x:1000:100:Nix build user:/build:/noshell\n",
  );
  writeFileSync(join(dir, "group"), "root:x:0:\nnixbld:!:100:\n");
}

/**
 * Modules that cannot run another program or open a socket: a module importing only these (and
 * relative modules of the same kind) computes in-process on files alone.
 */
const IN_PROCESS = new Set([
  "node:assert",
  "node:assert/strict",
  "node:buffer",
  "node:crypto",
  "node:events",
  "node:fs",
  "node:fs/promises",
  "node:module",
  "node:os",
  "node:path",
  "node:readline",
  "node:stream",
  "node:stream/promises",
  "node:timers/promises",
  "node:url",
  "node:util",
  "node:zlib",
  "vitest",
  "zod",
  "ts-pattern",
  "yaml",
  "smol-toml",
  "hyparquet",
  "hyparquet-writer",
  "@huggingface/jinja",
  "@huggingface/tokenizers",
]);
/** `from "x"`, `import "x"`, `import("x")`, `require("x")`: x (a module name or a relative path). */
const SPECIFIER = /(?<![.\w])(?:from|import|require)\s*\(?\s*["']((?:[@\w]|\.{1,2}\/)[\w@./:-]*)["']/g;
/** Reaching out without an import: the global fetch, an import or require of a computed name. */
const REACHES_OUT = /\bfetch\(|\b(?:import|require)\(\s*[^"'\s]/;

/**
 * Whether `file` or anything it imports can reach past its own process: a program, a worker, a
 * socket (any module not IN_PROCESS; relative imports and the workspace's `@flakegym/<name>`
 * packages are followed through `sources`, absolute path → text). Comments and strings count
 * too: a false match only keeps a file in. A module missing from `sources` reaches out. Pure.
 */
export function reachesOut(file: string, sources: ReadonlyMap<string, string>, root: string): boolean {
  const seen = new Set<string>();
  const visit = (f: string): boolean => {
    if (seen.has(f)) return false;
    seen.add(f);
    const text = sources.get(f);
    if (text === undefined || REACHES_OUT.test(text)) return true;
    for (const [, spec] of text.matchAll(SPECIFIER)) {
      const pkg = /^@flakegym\/([\w-]+)$/.exec(spec!)?.[1];
      const next = spec!.startsWith(".")
        ? join(f, "..", spec!).replace(/\.js$/, ".ts")
        : pkg
          ? join(root, "packages", pkg, "src/index.ts")
          : undefined;
      if (next ? visit(next) : !IN_PROCESS.has(spec!)) return true;
    }
    return false;
  };
  return visit(file);
}

/** Every `.ts` file under `dir` (node_modules and dist left out), absolute path → text. */
export function readSources(dir: string, into = new Map<string, string>()): Map<string, string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && !DROPPED.has(e.name)) readSources(p, into);
    else if (e.isFile() && e.name.endsWith(".ts")) into.set(p, readFileSync(p, "utf8"));
  }
  return into;
}

/**
 * The test files of the check's `projects` (packages/<name>) whose outcome the Nix build sandbox
 * can change (see reachesOut), relative to `root`. The others compute in-process on their own
 * sources, as they do in the projects' own run in `npm test`.
 */
export function sandboxSensitiveTests(root: string, projects: readonly string[]): string[] {
  const sources = readSources(join(root, "packages"));
  const dirs = projects.map((p) => join(root, "packages", p, "test/"));
  return [...sources.keys()]
    .filter((f) => f.endsWith(".test.ts") && dirs.some((d) => f.startsWith(d)))
    .filter((f) => reachesOut(f, sources, root))
    .map((f) => relative(root, f))
    .sort();
}
