import { readFileSync } from "node:fs";

/** flakegym's version, from the runner's package.json. */
export const FLAKEGYM_VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
