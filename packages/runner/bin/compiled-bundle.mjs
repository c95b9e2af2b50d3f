// The CLI (and `flakegym view`) from a JavaScript bundle of its TypeScript sources, built once with
// esbuild (at `npm ci`, or by the first start) and kept in a cache, keyed by the content of every file
// it was built from. Plain JavaScript: it runs before (and instead of) tsx's loader, whose per-start
// transpile and module walk were most of a command's start-up. Never stale: each start hashes the files the cached bundle was built from and uses
// it only when they all still hash the same; otherwise it rebuilds (from exactly the bytes it hashed).
import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire, isBuiltin } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { flakegymCacheRoot } from "../src/cache-root.mjs";

/**
 * One bundled entry point: its name (the bundle dirs' prefix), its TypeScript entry, and a format
 * string bumped when the build below changes in a way the inputs' hashes cannot see; `more`: further
 * entries built beside it (their own `.js` in the same dir, chunks shared).
 * @typedef {{ name: string, entry: string, format: string, more?: string[] }} BundleSpec
 */

/** @type {BundleSpec} */
export const VIEW_BUNDLE = {
  name: "view",
  entry: fileURLToPath(new URL("../src/cli/view-main.ts", import.meta.url)),
  format: "view-bundle-1",
};
/** @type {BundleSpec} */
export const CLI_BUNDLE = {
  name: "cli",
  entry: fileURLToPath(new URL("../src/cli/main.ts", import.meta.url)),
  format: "cli-bundle-3",
  // the policy gateway's thread (gateway/thread.ts starts it from here: no tsx loader in a run)
  more: [fileURLToPath(new URL("../src/gateway/thread-worker.ts", import.meta.url))],
};
/** Where a process running from a bundle finds its dir (set before the bundle is imported). */
export const BUNDLE_DIR_KEY = Symbol.for("flakegym.bundle-dir");
/**
 * `flakegym --help`'s text, written into the CLI bundle's dir when it is built (by the bundle itself:
 * its `mainHelpText`), so `--help` is answered without loading a command's module graph.
 */
const MAIN_HELP_FILE = "main-help.txt";
const SELF = fileURLToPath(import.meta.url);
const POINTER = "current.json";
const SKIP = Symbol("resolving");
/** Other bundles are removed once this old (a process started from one may still load a lazy chunk). */
const PRUNE_AFTER_MS = 24 * 3600_000;

/**
 * Where the bundles live: `view/` under the cache root the snapshot and image caches use.
 * @param {Record<string, string | undefined>} env
 */
export const viewCacheDir = (env) => join(flakegymCacheRoot(env), "view");

/**
 * Where the CLI's bundle lives: inside the install (`node_modules/.cache/flakegym-cli`, built by
 * `npm ci`), so a run with its own FLAKEGYM_CACHE (a test's, a fresh snapshot cache) still starts
 * from the install's bundle, and a bare import the bundle resolves at run time (the gateway thread's
 * `import.meta.resolve("tsx/esm/api")`) finds the install's packages from there.
 */
export function cliCacheDir() {
  const esbuildMain = createRequire(import.meta.url).resolve("esbuild");
  const nm = esbuildMain.slice(0, esbuildMain.lastIndexOf("/node_modules/") + "/node_modules".length);
  return join(nm, ".cache", "flakegym-cli");
}

/**
 * Why code in this dir must not be run (someone else could have written it), or undefined. Pure.
 * @param {{ uid: number, mode: number, isDirectory(): boolean }} st
 * @param {number} uid
 */
export function unsafeCacheDir(st, uid) {
  if (!st.isDirectory()) return "it is not a directory";
  if (st.uid !== uid) return `it belongs to uid ${st.uid}, not to you (uid ${uid})`;
  if ((st.mode & 0o022) !== 0) return "others can write to it (mode " + (st.mode & 0o777).toString(8) + ")";
  return undefined;
}

/**
 * The bundle's key: the build format and every input's path and content hash, in a fixed order. Pure.
 * @param {readonly { path: string, sha256: string }[]} inputs
 */
export function bundleKey(inputs, format = VIEW_BUNDLE.format) {
  const h = createHash("sha256").update(format);
  for (const i of [...inputs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    h.update(`\0${i.path}\0${i.sha256}`);
  }
  return h.digest("hex").slice(0, 32);
}

const sha256 = (/** @type {string | Buffer} */ b) => createHash("sha256").update(b).digest("hex");

/**
 * Files that steer the build without being modules of it: this file, esbuild's version, and the
 * package.json/tsconfig files above each module (module resolution, transpile settings).
 * @param {readonly string[]} modules
 */
async function settingsFiles(modules) {
  const esbuildPkg = join(dirname(createRequire(import.meta.url).resolve("esbuild")), "..", "package.json");
  const files = new Set([SELF, esbuildPkg]);
  const dirs = new Set(modules.map((m) => dirname(m)));
  for (let dir of dirs) {
    for (;;) {
      for (const f of ["package.json", "tsconfig.json", "tsconfig.base.json"]) files.add(join(dir, f));
      const up = dirname(dir);
      if (up === dir || dirs.has(up)) break;
      dir = up;
    }
  }
  const out = [];
  for (const path of files) {
    const bytes = await readFile(path).catch(() => undefined);
    if (bytes) out.push({ path, sha256: sha256(bytes) });
  }
  return out;
}

/**
 * @param {BundleSpec} spec @param {string} cache
 * @returns {Promise<string | undefined>} the bundle's entry if still current
 */
async function currentBundle(spec, cache) {
  const pointer = await readFile(join(cache, POINTER), "utf8").catch(() => undefined);
  if (!pointer) return undefined;
  /** @type {{ key: string, inputs: { path: string, sha256: string }[] }} */
  const p = JSON.parse(pointer);
  if (typeof p?.key !== "string" || !/^[0-9a-f]{32}$/.test(p.key) || !Array.isArray(p.inputs))
    return undefined;
  const now = await Promise.all(
    p.inputs.map(async (i) => {
      const bytes = await readFile(String(i.path)).catch(() => undefined);
      return bytes ? { path: String(i.path), sha256: sha256(bytes) } : undefined;
    }),
  );
  if (now.some((i, n) => !i || i.sha256 !== p.inputs[n]?.sha256)) return undefined;
  if (bundleKey(/** @type {{ path: string, sha256: string }[]} */ (now), spec.format) !== p.key)
    return undefined;
  const entry = join(cache, `${spec.name}-${p.key}`, entryFile(spec));
  return (await stat(entry).catch(() => undefined))?.isFile() ? entry : undefined;
}

/**
 * Bundles view-main.ts (our TypeScript and the workspace packages' inlined; npm packages stay imports)
 * into a new dir, renamed into place whole, then points current.json at it (written to a temporary
 * file and renamed). Each module's `import.meta.url` becomes its own source file's URL, so paths it
 * derives (the web frontend, package.json) are the same as when run from source.
 * @param {BundleSpec} spec @param {string} cache
 */
async function build(spec, cache) {
  const esbuild = await import("esbuild");
  /** @type {Map<string, string>} */
  const read = new Map();
  const tmp = join(cache, `tmp-${process.pid}-${Date.now()}`);
  try {
    await esbuild.build({
      entryPoints: [spec.entry, ...(spec.more ?? [])],
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outdir: tmp,
      entryNames: "[name]",
      logLevel: "silent",
      plugins: [
        {
          name: `flakegym-${spec.name}`,
          setup(b) {
            // npm packages stay imports, of the file they resolve to here (the bundle lives elsewhere);
            // workspace packages (TypeScript) are bundled like our own sources
            b.onResolve({ filter: /^[^./]/ }, async (a) => {
              if (a.pluginData === SKIP || a.path.startsWith("@flakegym/")) return undefined;
              if (isBuiltin(a.path)) return { external: true };
              const r = await resolveAsUsual(b, a);
              if (r.errors.length > 0) return { errors: r.errors };
              read.set(r.path, sha256(await readFile(r.path))); // a changed install rebuilds
              return { path: pathToFileURL(r.path).href, external: true };
            });
            // our modules have no import-time effects (a house rule), so one imported only for
            // a name the view never uses is left out, with what it imports (the gRPC client)
            b.onResolve({ filter: /^(\.|@flakegym\/)/ }, async (a) => {
              if (a.pluginData === SKIP) return undefined;
              const r = await resolveAsUsual(b, a);
              if (r.errors.length > 0) return { errors: r.errors };
              return { path: r.path, sideEffects: false };
            });
            b.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (a) => {
              const bytes = await readFile(a.path);
              read.set(a.path, sha256(bytes));
              const url = JSON.stringify(pathToFileURL(a.path).href);
              const loader = /\.[cm]?ts$/.test(a.path) ? "ts" : "js";
              return { contents: bytes.toString("utf8").replaceAll("import.meta.url", url), loader };
            });
          },
        },
      ],
    });
    if (spec === CLI_BUNDLE) await writeMainHelp(join(tmp, entryFile(spec)), join(tmp, MAIN_HELP_FILE));
    const modules = [...read.keys()];
    const inputs = [
      ...modules.map((path) => ({ path, sha256: /** @type {string} */ (read.get(path)) })),
      ...(await settingsFiles(modules)),
    ];
    const key = bundleKey(inputs, spec.format);
    const dir = join(cache, `${spec.name}-${key}`);
    await rename(tmp, dir).catch(async (e) => {
      if (e?.code !== "ENOTEMPTY" && e?.code !== "EEXIST") throw e; // another start built the same
      await rm(tmp, { recursive: true, force: true });
    });
    const pointerTmp = join(cache, `${POINTER}.tmp-${process.pid}`);
    await writeFile(pointerTmp, JSON.stringify({ key, inputs }));
    await rename(pointerTmp, join(cache, POINTER));
    await prune(cache, `${spec.name}-${key}`);
    return join(dir, entryFile(spec));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Writes `flakegym --help`'s text, as the just-built bundle renders it (a child node: the build's
 * process must not load the commands). Nothing is written when it fails: `--help` then loads them.
 * @param {string} entry @param {string} file
 */
async function writeMainHelp(entry, file) {
  const { execFile } = await import("node:child_process");
  const code = `const m = await import(${JSON.stringify(pathToFileURL(entry).href)}); process.stdout.write(await m.mainHelpText());`;
  const text = await new Promise((done) =>
    execFile(process.execPath, ["--input-type=module", "-e", code], { timeout: 120_000 }, (err, out) =>
      done(err ? undefined : out),
    ),
  );
  if (text) await writeFile(file, text);
}

/**
 * `flakegym --help`'s text from the current CLI bundle (built first if missing or stale), or
 * undefined (then the bundle's main renders it). Pure of the commands: none of them is loaded.
 * @param {Record<string, string | undefined>} env
 * @returns {Promise<string | undefined>}
 */
export async function compiledCliMainHelp(env) {
  const cache = cliBundleDir(env);
  if (cache === undefined) return undefined;
  try {
    const st = await stat(cache).catch(() => undefined);
    if (!st || unsafeCacheDir(st, process.getuid?.() ?? -1)) return undefined;
    const entry = await currentBundle(CLI_BUNDLE, cache);
    return entry ? await readFile(join(dirname(entry), MAIN_HELP_FILE), "utf8") : undefined;
  } catch {
    return undefined;
  }
}

/**
 * esbuild's own resolution of an import (marked so the plugin's hooks let it through).
 * @param {import("esbuild").PluginBuild} b
 * @param {import("esbuild").OnResolveArgs} a
 */
const resolveAsUsual = (b, a) =>
  b.resolve(a.path, { kind: a.kind, resolveDir: a.resolveDir, importer: a.importer, pluginData: SKIP });

/** @param {string} cache @param {string} keep */
async function prune(cache, keep) {
  const now = Date.now();
  for (const name of await readdir(cache)) {
    if (name === keep || name === POINTER || !/^(view-|cli-|tmp-)/.test(name)) continue;
    const st = await stat(join(cache, name)).catch(() => undefined);
    if (st && now - st.mtimeMs > PRUNE_AFTER_MS)
      await rm(join(cache, name), { recursive: true, force: true });
  }
}

/** The bundle's entry file name (the TypeScript entry's, as JavaScript). @param {BundleSpec} spec */
const entryFile = (spec) => `${spec.entry.split("/").at(-1)?.replace(/\.ts$/, "")}.js`;

/**
 * An entry's `main` from its cached bundle in `cache` (built first if missing or stale), or
 * undefined when the cache cannot be used (then the caller runs the sources through tsx).
 * @param {BundleSpec} spec @param {string} cache @param {Record<string, string | undefined>} env
 * @param {string} what how a refusal names the bundle
 * @returns {Promise<((argv: readonly string[]) => Promise<number>) | undefined>}
 */
async function compiledMain(spec, cache, env, what) {
  try {
    await mkdir(cache, { recursive: true, mode: 0o700 });
    const why = unsafeCacheDir(await stat(cache), process.getuid?.() ?? -1);
    if (why) {
      process.stderr.write(`flakegym: not using the compiled ${what} in ${cache}: ${why}\n`);
      return undefined;
    }
    const entry = (await currentBundle(spec, cache)) ?? (await build(spec, cache));
    /** @type {Record<symbol, unknown>} */ (globalThis)[BUNDLE_DIR_KEY] = dirname(entry);
    const mod = await import(pathToFileURL(entry).href);
    return mod.main;
  } catch (e) {
    if (env.FLAKEGYM_DEBUG) console.error(e);
    return undefined;
  }
}

/**
 * The view command's `main` from its bundle (in the cache root), or undefined: run from source.
 * @param {Record<string, string | undefined>} env
 */
export async function compiledViewMain(env) {
  if (env.FLAKEGYM_VIEW_FROM_SOURCE === "1") return undefined;
  return compiledMain(VIEW_BUNDLE, viewCacheDir(env), env, "viewer");
}

/**
 * Every other command's `main` from the CLI's bundle (inside the install), or undefined: run from
 * source (`FLAKEGYM_FROM_SOURCE=1` asks for that). `FLAKEGYM_TEST_BUNDLE_DIR`: a test's own dir.
 * @param {Record<string, string | undefined>} env
 */
export async function compiledCliMain(env) {
  const cache = cliBundleDir(env);
  return cache === undefined ? undefined : compiledMain(CLI_BUNDLE, cache, env, "CLI");
}

/**
 * The CLI bundle's dir (`FLAKEGYM_TEST_BUNDLE_DIR`: a test's own), or undefined when the CLI runs
 * from source (`FLAKEGYM_FROM_SOURCE=1`).
 * @param {Record<string, string | undefined>} env
 */
const cliBundleDir = (env) =>
  env.FLAKEGYM_FROM_SOURCE === "1" ? undefined : (env.FLAKEGYM_TEST_BUNDLE_DIR ?? cliCacheDir());
