#!/usr/bin/env node
// The flakegym CLI. Sources run through tsx's loader so a checkout works right after `npm ci`.
import { register } from "tsx/esm/api";

register();
// `flakegym view` loads only its own command (a viewer should open fast); everything else, all
const { main } = await import(process.argv[2] === "view" ? "../src/cli/view-main.ts" : "../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
