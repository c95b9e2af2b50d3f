// The Cline core's memory (issue 47), loaded into the core with `node --require <dir>/core-memory.cjs`
// from the directory mapped-core.ts builds in flakegym's cache (this file, the addon built from
// native/core-memory.cc, the bundle's text as Latin-1 bytes, manifest.json), bound read-only into a
// sandbox. It does two things:
// - The core's bundle, when Node loads it as the main module, is compiled from the Latin-1 file
//   mapped read-only (an external string): the 45 MB source sits in the page cache, one copy for
//   every core, instead of on each core's heap. Any failure falls back to Node's own loading.
// - `process[Symbol.for("flakegym.core.trim")](full)`: malloc_trim, after V8's low-memory collection
//   when `full`; core-gc.cjs calls it, so an idle core gives its free pages back.
"use strict";
const Module = require("node:module");
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const say = (what) => process.stderr.write(`flakegym-core-memory: ${what}\n`);
let addon;
let manifest;
try {
  addon = require("./core-memory.node");
  manifest = JSON.parse(readFileSync(join(__dirname, "manifest.json"), "utf8"));
} catch (err) {
  say(`not loaded (${err.message}); the core reads its bundle as usual`);
}
if (addon && manifest) {
  const js = Module._extensions[".js"];
  Module._extensions[".js"] = function coreMemoryJs(module, filename) {
    if (filename !== manifest.script) return js.call(this, module, filename);
    Module._extensions[".js"] = js;
    let source;
    try {
      source = addon.mapLatin1(join(__dirname, manifest.source));
      if (source.length !== manifest.chars)
        throw new Error(`${source.length} characters, not ${manifest.chars}`);
    } catch (err) {
      say(`the bundle's mapped source is not usable (${err.message}); read as usual`);
      return js.call(this, module, filename);
    }
    return module._compile(source, filename);
  };
  Object.defineProperty(process, Symbol.for("flakegym.core.trim"), {
    value: (full) => addon.trim(full === true),
  });
}
