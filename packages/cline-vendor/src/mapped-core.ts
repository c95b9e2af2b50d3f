import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { chmod, copyFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { ClineVendorError, ErrorCode } from "./errors.js";
import { parseSwitch, switchedOffReason } from "./memory-merge.js";
import { builtHash, ONE_BYTE_PINS, type OneByteDecision } from "./one-byte-core.js";

/**
 * The core's bundle source mapped from a file, and its free memory given back (issue 47). Each
 * idle core held its 45 MB bundle source as a private string on its V8 heap (V8 compiles functions
 * lazily, so the source stays). Built once into flakegym's cache beside the one-byte bundle: the
 * one-byte text written as Latin-1 bytes (one byte a character, the same string), a Node-API addon
 * (native/core-memory.cc, compiled with the host's C++ compiler against the running Node's headers)
 * and the preload supervisor/core-memory.cjs with a manifest. A core started with `--require
 * <dir>/core-memory.cjs` compiles its bundle from the file mapped read-only (page cache: one copy
 * for every core on the machine) and, on core-gc.cjs's signal, runs V8's low-memory collection and
 * malloc_trim. `FLAKEGYM_CORE_MAPPED_SOURCE=0` opts out.
 */

/** sha256 of the one-byte bundle's text as Latin-1 bytes (it follows from ONE_BYTE_PINS.output). */
export const MAPPED_SOURCE_PIN = "ab03e4531ef4b4d2ab0d845ba20c7f732e6a0d9a80c110f7968f96112e09be45";
export const MAPPED_SOURCE_ENV = "FLAKEGYM_CORE_MAPPED_SOURCE";
const SOURCE = "cline-core.latin1";
const ADDON_SOURCE = fileURLToPath(new URL("../native/core-memory.cc", import.meta.url));
const PRELOAD_SOURCE = fileURLToPath(new URL("../supervisor/core-memory.cjs", import.meta.url));
export const CORE_MEMORY_PRELOAD = "core-memory.cjs";

export type MappedCoreDecision =
  | { readonly on: true; readonly dir: string; readonly preload: string }
  | { readonly on: false; readonly reason: string };

/** What `manifest.json` in the built directory says (the preload reads it). */
export interface MappedCoreManifest {
  /** The real path of the one-byte cline-core.js this source stands for. */
  readonly script: string;
  readonly source: string;
  readonly chars: number;
  readonly sha256: string;
}

export interface MappedCoreFacts {
  readonly requested?: boolean;
  readonly envValue?: string;
  readonly oneByte: OneByteDecision;
  readonly dir: string;
  /** sha256 of `<dir>/cline-core.latin1`, undefined when there is none. */
  readonly builtHash?: string;
  readonly addonPresent: boolean;
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** The directory for one one-byte build, keyed by the addon's and the preload's sources and Node's ABI. */
export function mappedCoreDir(cacheRoot: string, oneByteDir: string): string {
  const key = sha256(
    [
      readFileSync(ADDON_SOURCE),
      readFileSync(PRELOAD_SOURCE),
      MAPPED_SOURCE_PIN,
      process.versions.modules,
    ].join("\0"),
  );
  return join(cacheRoot, "cline-core", `mapped-${key.slice(0, 16)}-${sha256(oneByteDir).slice(0, 12)}`);
}

/** Pure: whether a core compiles its bundle from the mapped file, and if not, why. */
export function decideMappedCore(f: MappedCoreFacts): MappedCoreDecision {
  const off = switchedOffReason(f.requested, MAPPED_SOURCE_ENV, f.envValue);
  if (off) return { on: false, reason: off };
  if (!f.oneByte.on)
    return { on: false, reason: `it maps the one-byte bundle, which is off: ${f.oneByte.reason}` };
  const build = "run `npm run core:one-byte` (npm ci does it) to build it";
  if (f.builtHash === undefined || !f.addonPresent)
    return { on: false, reason: `the mapped source is not built in ${f.dir}; ${build}` };
  if (f.builtHash !== MAPPED_SOURCE_PIN)
    return {
      on: false,
      reason: `${join(f.dir, SOURCE)} has sha256 ${f.builtHash}, not the pinned ${MAPPED_SOURCE_PIN}; remove ${f.dir} and ${build}`,
    };
  return { on: true, dir: f.dir, preload: join(f.dir, CORE_MEMORY_PRELOAD) };
}

/** Reads the facts (the built file's hash, the addon, the switch) and decides. */
export function probeMappedCore(
  oneByte: OneByteDecision,
  cacheRoot: string,
  requested?: boolean,
  env: NodeJS.ProcessEnv = process.env,
): MappedCoreDecision {
  const envValue = env[MAPPED_SOURCE_ENV] === "" ? undefined : env[MAPPED_SOURCE_ENV];
  if (
    !oneByte.on ||
    requested === false ||
    (envValue !== undefined && !parseSwitch(MAPPED_SOURCE_ENV, envValue))
  )
    return decideMappedCore({
      ...(requested !== undefined ? { requested } : {}),
      ...(envValue !== undefined ? { envValue } : {}),
      oneByte,
      dir: "",
      addonPresent: false,
    });
  const dir = mappedCoreDir(cacheRoot, oneByte.dir);
  const hash = builtHash(join(dir, SOURCE));
  return decideMappedCore({
    ...(requested !== undefined ? { requested } : {}),
    ...(envValue !== undefined ? { envValue } : {}),
    oneByte,
    dir,
    ...(hash !== undefined ? { builtHash: hash } : {}),
    addonPresent: existsSync(join(dir, "core-memory.node")),
  });
}

function refuse(message: string, hint: string): never {
  throw new ClineVendorError(ErrorCode.BadInstall, message, { hint });
}

/** The running Node's headers (`<prefix>/include/node`), where node_api.h and v8.h are. */
export function nodeHeadersDir(execPath: string = process.execPath): string {
  return join(dirname(dirname(realpathSync(execPath))), "include", "node");
}

/** Compiles the addon into `out` with `$CXX` (default c++); throws naming what is missing. */
async function compileAddon(out: string): Promise<void> {
  const headers = nodeHeadersDir();
  if (!existsSync(join(headers, "node_api.h")) || !existsSync(join(headers, "v8.h")))
    refuse(
      `the running Node's headers are not in ${headers} (node_api.h, v8.h)`,
      "install Node's development headers (Debian: the nodejs package ships them), or run with FLAKEGYM_CORE_MAPPED_SOURCE=0",
    );
  const cxx = process.env["CXX"] || "c++";
  const r = await execa(cxx, ["-O2", "-shared", "-fPIC", "-I", headers, "-o", out, ADDON_SOURCE], {
    reject: false,
    timeout: 180_000,
  });
  if (r.exitCode !== 0)
    refuse(
      `${cxx} could not build ${ADDON_SOURCE}: ${String(r.stderr || r.message)
        .split("\n")
        .slice(0, 4)
        .join(" ")}`,
      "install a C++ compiler (g++), or run with FLAKEGYM_CORE_MAPPED_SOURCE=0",
    );
}

/** The one-byte text as Latin-1 bytes, checked to decode to the same string and against the pin. */
function latin1Of(text: string): Buffer {
  const bytes = Buffer.from(text, "latin1");
  if (bytes.length !== text.length || bytes.toString("latin1") !== text)
    refuse(
      "the one-byte bundle holds a character above U+00FF, so it has no Latin-1 form",
      "rebuild it (`npm run core:one-byte`), or run with FLAKEGYM_CORE_MAPPED_SOURCE=0",
    );
  const got = sha256(bytes);
  if (got !== MAPPED_SOURCE_PIN)
    refuse(
      `the Latin-1 form of the one-byte bundle has sha256 ${got}, not the pinned ${MAPPED_SOURCE_PIN}`,
      "rebuild the one-byte bundle (`npm run core:one-byte`), or update MAPPED_SOURCE_PIN after reviewing the change",
    );
  return bytes;
}

export interface MappedCoreBuild {
  readonly dir: string;
  /** False when the directory was already there (nothing done). */
  readonly built: boolean;
}

/**
 * Builds the directory for the one-byte bundle `oneByte` (nothing to do when it is there with the
 * pinned hash). Written in a private directory first and renamed into place, every file read-only.
 */
export async function buildMappedCore(
  oneByte: { readonly dir: string; readonly coreJs: string },
  cacheRoot: string,
): Promise<MappedCoreBuild> {
  const dir = mappedCoreDir(cacheRoot, oneByte.dir);
  if (builtHash(join(dir, SOURCE)) === MAPPED_SOURCE_PIN && existsSync(join(dir, "core-memory.node")))
    return { dir, built: false };
  const text = await readFile(oneByte.coreJs, "utf8");
  if (sha256(text) !== ONE_BYTE_PINS.output)
    refuse(`${oneByte.coreJs} is not the pinned one-byte bundle`, "rebuild it with `npm run core:one-byte`");
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  await mkdir(tmp, { recursive: true });
  try {
    await compileAddon(join(tmp, "core-memory.node"));
    await writeFile(join(tmp, SOURCE), latin1Of(text));
    await copyFile(PRELOAD_SOURCE, join(tmp, CORE_MEMORY_PRELOAD));
    const manifest: MappedCoreManifest = {
      script: realpathSync(oneByte.coreJs),
      source: SOURCE,
      chars: text.length,
      sha256: MAPPED_SOURCE_PIN,
    };
    await writeFile(join(tmp, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    for (const f of [SOURCE, CORE_MEMORY_PRELOAD, "manifest.json"]) await chmod(join(tmp, f), 0o444);
    await chmod(join(tmp, "core-memory.node"), 0o555);
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir).catch((e: NodeJS.ErrnoException) => {
      if (builtHash(join(dir, SOURCE)) !== MAPPED_SOURCE_PIN) throw e; // another builder won the race
    });
    return { dir, built: true };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
