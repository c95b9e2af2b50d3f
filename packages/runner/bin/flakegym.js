#!/usr/bin/env node
// The flakegym CLI, from a bundle of its TypeScript sources (compiled-bundle.mjs: built by `npm ci` or
// the first start, cached by their content, so never stale); `flakegym view` from a bundle of its own.
// When a bundle cannot be used, from source through tsx's loader (FLAKEGYM_FROM_SOURCE=1 asks for it).
const view = process.argv[2] === "view";
const { compiledCliMain, compiledCliMainHelp, compiledViewMain } = await import("./compiled-bundle.mjs");
const argv = process.argv.slice(2);
// `--help` from the text the bundle's build wrote beside it: no command's module is loaded
const help =
  argv.length === 1 && (argv[0] === "--help" || argv[0] === "-h")
    ? await compiledCliMainHelp(process.env)
    : undefined;
const main = help === undefined ? await (view ? compiledViewMain : compiledCliMain)(process.env) : undefined;
if (help !== undefined) {
  process.stdout.write(help);
} else if (main) {
  process.exitCode = await main(process.argv.slice(2));
} else {
  await fromSource(view ? "../src/cli/view-main.ts" : "../src/cli/main.ts");
}

async function fromSource(entry) {
  const { register } = await import("tsx/esm/api");
  register();
  const { main } = await import(entry);
  process.exitCode = await main(process.argv.slice(2));
}
