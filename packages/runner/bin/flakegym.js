#!/usr/bin/env node
// The flakegym CLI. Sources run through tsx's loader so a checkout works right after `npm ci`.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
