#!/usr/bin/env node
// core-code-cache: runs the compiled Cline core's CommonJS bundle with a V8 code cache, the
// Node 20 stand-in for Node ≥ 22.1's module compile cache (NODE_COMPILE_CACHE). Plain Node, built-ins
// only, like the supervisor that starts it.
//
//   node core-code-cache.mjs --cache <file> [--produce] -- <core.js> [core args...]
//
// - consume (default): compiles <core.js> with <file> as V8 cached data when the file is there and
//   V8 accepts it (V8 itself rejects a cache made for other source, another V8 or other flags; the
//   core then compiles as usual). The file is only read: it is made by a trusted warm-up core and
//   bound read-only into sandboxes, never written by a core that ran a task.
// - --produce: runs the core normally and, on SIGUSR2, writes the code of every function compiled so
//   far (top level and what booting ran) to <file> atomically (temp + rename), then prints
//   {"event":"code-cache-written",...} to stderr.
// The core sees itself as the main module: process.argv is [node, <core.js>, core args...],
// require.main is its module, and its dynamic import() resolves as if Node had loaded it.

import { readFileSync, renameSync, writeFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { dirname } from "node:path";
import vm from "node:vm";

function fail(message) {
  process.stderr.write(
    `core-code-cache: ${message}\nusage: core-code-cache --cache <file> [--produce] -- <core.js> [args...]\n`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { cache: undefined, produce: false, core: undefined, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      opts.core = argv[i + 1];
      opts.rest = argv.slice(i + 2);
      break;
    }
    if (a === "--produce") opts.produce = true;
    else if (a === "--cache") {
      opts.cache = argv[i + 1];
      i++;
    } else fail(`unknown flag '${a}'`);
  }
  if (!opts.cache) fail("--cache is required");
  if (!opts.core) fail("the core bundle after -- is required");
  return opts;
}

function readCache(file) {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/** Compiles the bundle; the source text and the cache bytes are not kept past this call. */
function compile(filename, cacheFile, produce) {
  const cachedData = produce ? undefined : readCache(cacheFile);
  const script = new vm.Script(Module.wrap(readFileSync(filename, "utf8")), {
    filename,
    ...(cachedData ? { cachedData } : {}),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const status = cachedData
    ? script.cachedDataRejected
      ? "rejected"
      : "used"
    : produce
      ? "producing"
      : "absent";
  process.stderr.write(`${JSON.stringify({ event: "code-cache", status, file: cacheFile })}\n`);
  return script;
}

const opts = parseArgs(process.argv.slice(2));
const filename = opts.core;
const script = compile(filename, opts.cache, opts.produce);

if (opts.produce) {
  const cacheFile = opts.cache;
  process.on("SIGUSR2", () => {
    const data = script.createCachedData();
    const tmp = `${cacheFile}.tmp-${process.pid}`;
    writeFileSync(tmp, data, { mode: 0o444 });
    renameSync(tmp, cacheFile);
    process.stderr.write(`${JSON.stringify({ event: "code-cache-written", bytes: data.length })}\n`);
  });
}

// The core as Node's CommonJS loader would run it as the main module.
const mod = new Module(".", null);
mod.filename = filename;
mod.paths = Module._nodeModulePaths(dirname(filename));
Module._cache[filename] = mod;
process.mainModule = mod;
process.argv = [process.argv[0], filename, ...opts.rest];
const require = createRequire(filename);
require.main = mod;
const wrapper = script.runInThisContext();
wrapper.call(mod.exports, mod.exports, require, mod, filename, dirname(filename));
mod.loaded = true;
