#!/usr/bin/env node
// The flakegym CLI. Sources run through tsx's loader so a checkout works right after `npm ci`.
// `flakegym view` (a viewer should open fast) runs from a bundle of its own sources, built once and
// cached by their content (compiled-view.mjs); when that cache cannot be used, from source like the rest.
if (process.argv[2] === "view") {
  const { compiledViewMain } = await import("./compiled-view.mjs");
  const main = await compiledViewMain(process.env);
  if (main) {
    process.exitCode = await main(process.argv.slice(2));
  } else {
    await fromSource("../src/cli/view-main.ts");
  }
} else {
  await fromSource("../src/cli/main.ts");
}

async function fromSource(entry) {
  const { register } = await import("tsx/esm/api");
  register();
  const { main } = await import(entry);
  process.exitCode = await main(process.argv.slice(2));
}
