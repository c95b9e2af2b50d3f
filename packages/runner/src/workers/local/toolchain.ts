import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ProfileId } from "@flakegym/profiles";
import { execa } from "execa";
import { nixStorePathOf } from "../../nix/store-path.js";
import type { Bind } from "./bwrap-args.js";

/**
 * What a profile's toolchain needs inside the sandbox on this host: read-only binds for tools that
 * live outside /usr (rustup's sysroot, a node outside /usr), PATH entries and environment.
 */
export interface Toolchain {
  readonly binds: readonly Bind[];
  /** Directories (sandbox paths) prepended to PATH. */
  readonly path: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export const SANDBOX_RUST_DIR = "/opt/rust";
export const SANDBOX_NODE_DIR = "/opt/node";
export const BASE_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/**
 * Go offline: the host's Go only (never a downloaded toolchain), modules from vendor/ (a task
 * without dependencies needs none), no telemetry. GOPATH/GOMODCACHE live in the snapshot's deps.
 */
export const GO_ENV: Readonly<Record<string, string>> = {
  GOTOOLCHAIN: "local",
  GOFLAGS: "-mod=vendor",
  GOTELEMETRY: "off",
};

const cache = new Map<string, Promise<Toolchain>>();

async function rustSysroot(): Promise<string | undefined> {
  const r = await execa("rustc", ["--print", "sysroot"], { reject: false, timeout: 15_000, stdin: "ignore" });
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : undefined;
}

/** Where Nix keeps packages. A node from it loads its own loader and libraries from the store. */
export const NIX_STORE_DIR = "/nix/store";
/**
 * A file listing the store paths the runner needs at run time, one a line (the flake's
 * `flakegym-rollout` app sets it: nix/runtime-closure.nix). Without it a store-built node gets the
 * whole store, read-only.
 */
export const STORE_CLOSURE_ENV = "FLAKEGYM_STORE_CLOSURE";

/** The store paths listed in a closure file's text (blank lines and non-store lines dropped). */
export function parseStoreClosure(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => nixStorePathOf(l) === l);
}

function storeClosureFromEnv(): string[] | undefined {
  const file = process.env[STORE_CLOSURE_ENV];
  if (!file) return undefined;
  try {
    return parseStoreClosure(readFileSync(file, "utf8"));
  } catch (e) {
    throw new Error(
      `${STORE_CLOSURE_ENV}=${file} cannot be read (${(e as Error).message}); unset it or point it at the runtime closure file`,
    );
  }
}

/**
 * The node runtime inside the sandbox: nothing for a node under /usr (bound anyway); a node from
 * the Nix store at its own path with its runtime closure read-only (its loader, libraries and the
 * Cline core live there; `closure` undefined binds the whole store read-only); any other node's
 * prefix at /opt/node.
 */
export function nodeBinds(
  execPath: string = process.execPath,
  closure: readonly string[] | undefined = nixStorePathOf(execPath) ? storeClosureFromEnv() : undefined,
): { binds: Bind[]; path: string[] } {
  if (execPath.startsWith("/usr/")) return { binds: [], path: [] };
  if (nixStorePathOf(execPath)) {
    const paths = closure?.length ? closure : [NIX_STORE_DIR];
    return { binds: paths.map((p) => ({ src: p, dest: p })), path: [dirname(execPath)] };
  }
  const prefix = dirname(dirname(execPath));
  return { binds: [{ src: prefix, dest: SANDBOX_NODE_DIR }], path: [`${SANDBOX_NODE_DIR}/bin`] };
}

/**
 * A profile's toolchain from the Nix store (`nix run .#rollout`): its tree (a buildEnv) and the
 * closure it needs at run time, realised before the run (nix/realise.ts).
 */
export interface StoreToolchain {
  readonly path: string;
  readonly closure: readonly string[];
}
const storeToolchains = new Map<ProfileId, StoreToolchain>();

/**
 * Makes this process's sandboxes of `profile` run on `t` instead of this machine's toolchain: its
 * closure bound read-only at its own paths, its bin/ first on PATH (before the runner's node and
 * /usr), nothing of rustup bound.
 */
export function useStoreToolchain(profile: ProfileId, t: StoreToolchain): void {
  storeToolchains.set(profile, t);
  cache.delete(profile);
}

/** The binds and PATH of a store toolchain beside the node ones (no path bound twice). Pure. */
export function storeToolchainLayout(
  t: StoreToolchain,
  node: { binds: readonly Bind[]; path: readonly string[] },
): { binds: Bind[]; path: string[] } {
  const have = new Set(node.binds.map((b) => b.dest));
  const extra = t.closure.filter((p) => !have.has(p)).map((p) => ({ src: p, dest: p }));
  return { binds: [...node.binds, ...extra], path: [`${t.path}/bin`, ...node.path] };
}

async function detect(profile: ProfileId): Promise<Toolchain> {
  const node = nodeBinds();
  const store = storeToolchains.get(profile);
  const env: Record<string, string> = {};
  if (profile === "python") env.PYTHONDONTWRITEBYTECODE = "1";
  if (profile === "go") Object.assign(env, GO_ENV);
  if (store) return { ...storeToolchainLayout(store, node), env };
  const binds: Bind[] = [...node.binds];
  const path: string[] = [...node.path];
  if (profile === "rust") {
    const sysroot = await rustSysroot();
    if (sysroot && !sysroot.startsWith("/usr/")) {
      binds.push({ src: sysroot, dest: SANDBOX_RUST_DIR });
      path.unshift(`${SANDBOX_RUST_DIR}/bin`);
    }
  }
  return { binds, path, env };
}

/** Detects (once per process) what `profile` needs inside the sandbox on this host. */
export function toolchainFor(profile: ProfileId): Promise<Toolchain> {
  let p = cache.get(profile);
  if (!p) {
    p = detect(profile);
    cache.set(profile, p);
  }
  return p;
}
