import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { chmod, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ClineVendorError, ErrorCode } from "./errors.js";
import { parseSwitch, switchedOffReason } from "./memory-merge.js";
import { escapeWideCharacters, type Place } from "./one-byte-bundle.js";
import { compareMeaning } from "./one-byte-verify.js";
import type { ClinePackage } from "./paths.js";

/**
 * The core's bundle as a one-byte string, built once into flakegym's cache (issue 32): the pinned
 * bundle (its hash must be the one below; any other is refused) rewritten by
 * {@link escapeWideCharacters}, proved to mean the same by {@link compareMeaning}, checked against
 * the pinned hash of the rewrite (the transform is deterministic), and laid out as a directory
 * beside which the core finds everything it finds beside the original (every other entry of the
 * package is a symlink to it). The original is never touched. `FLAKEGYM_CORE_ONE_BYTE=0` opts out.
 */

/** sha256 of cline@1.0.10's cline-core.js, and of its one-byte rewrite by this transform (acorn 8.19). */
export const ONE_BYTE_PINS = {
  input: "6a1b21faac03077f2f5e10aeab12b7dacd8d56d60a96dc3d7221708fc26a1199",
  output: "d0f697591deb23724fed86474ad46516828f381c6e205d5e6d104d5913683684",
} as const;
export const ONE_BYTE_ENV = "FLAKEGYM_CORE_ONE_BYTE";
const MANIFEST = "one-byte.json";

export type OneByteDecision =
  | { readonly on: true; readonly coreJs: string; readonly dir: string }
  | { readonly on: false; readonly reason: string };

export interface OneByteFacts {
  /** The caller's explicit choice; wins over the environment. */
  readonly requested?: boolean;
  readonly envValue?: string;
  readonly dir: string;
  /** sha256 of `<dir>/cline-core.js`, undefined when there is none. */
  readonly builtHash?: string;
  readonly pinnedOutput: string;
}

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** The cache directory of the rewrite for one installed package (its location is in the name: the symlinks point there). */
export function oneByteCoreDir(cacheRoot: string, pkg: Pick<ClinePackage, "root">): string {
  return join(
    cacheRoot,
    "cline-core",
    `one-byte-${ONE_BYTE_PINS.output.slice(0, 16)}-${sha256(pkg.root).slice(0, 12)}`,
  );
}

/** Pure: whether a core runs the one-byte bundle, and if not, why. */
export function decideOneByteCore(f: OneByteFacts): OneByteDecision {
  const off = switchedOffReason(f.requested, ONE_BYTE_ENV, f.envValue);
  if (off) return { on: false, reason: off };
  const build = "run `npm run core:one-byte` (npm ci does it) to build it";
  if (f.builtHash === undefined)
    return { on: false, reason: `the one-byte bundle is not built in ${f.dir}; ${build}` };
  if (f.builtHash !== f.pinnedOutput)
    return {
      on: false,
      reason: `${join(f.dir, "cline-core.js")} has sha256 ${f.builtHash}, not the pinned ${f.pinnedOutput}; remove ${f.dir} and ${build}`,
    };
  return { on: true, coreJs: join(f.dir, "cline-core.js"), dir: f.dir };
}

const hashMemo = new Map<string, string>();

/** sha256 of a file, remembered per (path, inode, size, mtime) for this process: a launch pays it once. */
export function builtHash(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const st = statSync(file);
  const key = `${file}\0${st.ino}\0${st.size}\0${st.mtimeMs}`;
  let h = hashMemo.get(key);
  if (h === undefined) {
    h = sha256(readFileSync(file));
    hashMemo.set(key, h);
  }
  return h;
}

/** Reads the facts (the built file's hash, the switch) and decides. */
export function probeOneByteCore(
  pkg: Pick<ClinePackage, "root">,
  cacheRoot: string,
  requested?: boolean,
  env: NodeJS.ProcessEnv = process.env,
): OneByteDecision {
  const dir = oneByteCoreDir(cacheRoot, pkg);
  const envValue = env[ONE_BYTE_ENV];
  const wantedByEnv = envValue === undefined || envValue === "" || parseSwitch(ONE_BYTE_ENV, envValue);
  const hash = (requested ?? wantedByEnv) ? builtHash(join(dir, "cline-core.js")) : undefined;
  return decideOneByteCore({
    ...(requested !== undefined ? { requested } : {}),
    ...(envValue !== undefined && envValue !== "" ? { envValue } : {}),
    dir,
    ...(hash !== undefined ? { builtHash: hash } : {}),
    pinnedOutput: ONE_BYTE_PINS.output,
  });
}

export interface OneByteBuild {
  readonly dir: string;
  readonly coreJs: string;
  /** Wide characters found, per place. */
  readonly counts: Readonly<Record<Place, number>>;
  /** Nodes and string literals compared between the original and the rewrite. */
  readonly nodesCompared: number;
  readonly stringLiteralsCompared: number;
  /** False when the directory was already there (nothing done). */
  readonly built: boolean;
}

function refuse(message: string, hint: string): never {
  throw new ClineVendorError(ErrorCode.BadInstall, message, { hint });
}

/** Rewrites, proves and checks the bundle text; throws naming what failed. */
function rewriteVerified(source: string, pins: { input: string; output: string }) {
  const got = sha256(source);
  if (got !== pins.input)
    refuse(
      `the core bundle has sha256 ${got}; the one-byte transform knows only ${pins.input} (cline@1.0.10) and refuses another`,
      "reinstall the pinned cline (`npm ci`), or run with FLAKEGYM_CORE_ONE_BYTE=0",
    );
  const r = escapeWideCharacters(source);
  if (!r.oneByte)
    refuse(
      `the rewrite is not one-byte: characters in tagged templates (${r.taggedTags.join(", ")}) were left as they are`,
      "the lever does not hold for this bundle; run with FLAKEGYM_CORE_ONE_BYTE=0",
    );
  const m = compareMeaning(source, r.text);
  if (m.differences.length > 0)
    refuse(
      `the rewrite does not mean what the original means: ${m.differences
        .slice(0, 5)
        .map((d) => `offset ${d.offset}: ${d.what}`)
        .join("; ")}`,
      "report it; run with FLAKEGYM_CORE_ONE_BYTE=0",
    );
  const out = sha256(r.text);
  if (out !== pins.output)
    refuse(
      `the rewrite has sha256 ${out}, not the pinned ${pins.output} (another acorn version or transform?)`,
      "reinstall with `npm ci` (acorn is pinned in package-lock.json), or update ONE_BYTE_PINS.output after reviewing the change",
    );
  return { text: r.text, counts: r.counts, nodes: m.nodes, strings: m.stringLiterals };
}

/**
 * Builds the one-byte bundle's directory under `cacheRoot` (nothing to do when it is there with the
 * pinned hash). Written in a private directory first and renamed into place, so a reader never sees
 * half of it and two builders at once both succeed.
 */
export async function buildOneByteCore(
  pkg: Pick<ClinePackage, "root" | "coreJs">,
  cacheRoot: string,
  pins: { input: string; output: string } = ONE_BYTE_PINS,
): Promise<OneByteBuild> {
  const dir = oneByteCoreDir(cacheRoot, pkg);
  const coreJs = join(dir, "cline-core.js");
  if (builtHash(coreJs) === pins.output) {
    const manifest = JSON.parse(await readFile(join(dir, MANIFEST), "utf8")) as OneByteBuild;
    return { ...manifest, dir, coreJs, built: false };
  }
  const v = rewriteVerified(await readFile(pkg.coreJs, "utf8"), pins);
  const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  await mkdir(tmp, { recursive: true });
  try {
    for (const e of await readdir(pkg.root))
      if (e !== "cline-core.js" && e !== MANIFEST) await symlink(join(pkg.root, e), join(tmp, e));
    await writeFile(join(tmp, "cline-core.js"), v.text);
    await chmod(join(tmp, "cline-core.js"), 0o444);
    const build = { counts: v.counts, nodesCompared: v.nodes, stringLiteralsCompared: v.strings, pins };
    await writeFile(join(tmp, MANIFEST), `${JSON.stringify(build, null, 2)}\n`);
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir).catch(async (e: NodeJS.ErrnoException) => {
      if (builtHash(coreJs) !== pins.output) throw e; // another builder won the race with the same result
    });
    return {
      dir,
      coreJs,
      counts: v.counts,
      nodesCompared: v.nodes,
      stringLiteralsCompared: v.strings,
      built: true,
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
