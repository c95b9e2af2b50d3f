import { execFileSync } from "node:child_process";
import { cp, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";

/**
 * The flake, evaluated offline against the test stub of nixpkgs (tests/nix/stub-nixpkgs) and a
 * tiny stand-in for the ratatui source (tests/nix/stub-ratatui). Evaluating a `path:` flake copies
 * its tree into the store, so this works on a temp copy of the repository's tracked and untracked
 * files without node_modules, plus a few planted decoys (node_modules, dist) that the flake's
 * source filter must keep out.
 */

/**
 * A Nix the offline checks run with: this machine's (Debian 12's 2.8) and a modern one (Debian
 * trixie's 2.26 from scripts/ensure-modern-nix, in a private root with its own store). `storeRoot`
 * is where its `/nix/store` lives on this machine ("" for the system's).
 */
export interface NixImpl {
  readonly label: string;
  readonly bin: string;
  readonly version: string;
  readonly storeRoot: string;
  /** `nix flake check|show --all-systems` exists from Nix 2.13 on. */
  readonly allSystems: boolean;
}

function nixVersion(bin: string): string | null {
  try {
    const out = execFileSync(bin, ["--version"], {
      encoding: "utf8",
      timeout: 30_000,
      stdio: ["ignore", "pipe", "ignore"],
    });
    return /(\d+\.\d+(?:\.\d+)?)/.exec(out)?.[1] ?? null;
  } catch {
    return null;
  }
}

const atLeast = (version: string, min: readonly [number, number]) => {
  const [a = 0, b = 0] = version.split(".").map(Number);
  return a > min[0] || (a === min[0] && b >= min[1]);
};

function impl(label: string, bin: string, storeRoot: string): NixImpl | null {
  const version = nixVersion(bin);
  return version === null
    ? null
    : { label: `${label} Nix ${version}`, bin, version, storeRoot, allSystems: atLeast(version, [2, 13]) };
}

/** Does this machine have a `nix` that can evaluate flakes? (scripts/ensure-system-deps installs it) */
export function nixAvailable(): boolean {
  return nixVersion("nix") !== null;
}

export const NIX_MISSING_REASON =
  "skipping the offline flake checks: `nix` is not installed (sh scripts/ensure-system-deps installs nix-bin)";

let modern: { impl: NixImpl | null; reason: string } | undefined;
/**
 * The modern Nix: `FLAKEGYM_MODERN_NIX` (a `nix` binary), else scripts/ensure-modern-nix (which
 * downloads and unpacks it once, ~40 MB, printing its progress). `reason` says why there is none.
 */
export function modernNix(): { impl: NixImpl | null; reason: string } {
  if (modern) return modern;
  const given = process.env.FLAKEGYM_MODERN_NIX;
  if (given) {
    const i = impl("FLAKEGYM_MODERN_NIX", given, "");
    modern = { impl: i, reason: i ? "" : `FLAKEGYM_MODERN_NIX=${given} does not answer --version` };
    return modern;
  }
  try {
    const bin = execFileSync("sh", [join(REPO_ROOT, "scripts/ensure-modern-nix"), "--print-path"], {
      encoding: "utf8",
      timeout: 600_000,
      stdio: ["ignore", "pipe", "inherit"],
    }).trim();
    const i = impl("trixie's", bin, join(dirname(dirname(bin)), "store"));
    modern = { impl: i, reason: i ? "" : `${bin} does not answer --version` };
  } catch (e) {
    modern = {
      impl: null,
      reason: `scripts/ensure-modern-nix failed: ${(e as Error).message.split("\n")[0]}`,
    };
  }
  return modern;
}

/**
 * The Nix CI installs: `.github/workflows/nix.yml` pins cachix/install-nix-action to the release
 * that installs this version, the same Debian unstable's nix-bin has, so it is checked here too
 * (scripts/ensure-modern-nix --suite sid). Move the three together.
 */
export const CI_NIX = {
  version: "2.34.8",
  action: "cachix/install-nix-action@a49548c11d9846ad46ecc0115273879b045f001c",
  suite: "sid",
} as const;

let ci: { bin: string | null; reason: string } | undefined;
/** CI's Nix from Debian (`bin`), or why there is none here (`reason`). Installed once, ~40 MB. */
export function ciNix(): { bin: string | null; reason: string } {
  if (ci) return ci;
  try {
    const bin = execFileSync(
      "sh",
      [join(REPO_ROOT, "scripts/ensure-modern-nix"), "--suite", CI_NIX.suite, "--print-path"],
      { encoding: "utf8", timeout: 600_000, stdio: ["ignore", "pipe", "inherit"] },
    ).trim();
    const version = nixVersion(bin);
    ci =
      version === CI_NIX.version
        ? { bin, reason: "" }
        : {
            bin: null,
            reason: `Debian ${CI_NIX.suite}'s nix-bin is ${version ?? "not runnable"}, CI's is ${CI_NIX.version}: repin ${CI_NIX.action.split("@")[0]} in .github/workflows/nix.yml to the release that installs it and update CI_NIX`,
          };
  } catch (e) {
    ci = {
      bin: null,
      reason: `scripts/ensure-modern-nix --suite ${CI_NIX.suite} failed: ${(e as Error).message.split("\n")[0]}`,
    };
  }
  return ci;
}

/**
 * Every Nix the offline checks run with: the system's and the modern one. Prints why one is
 * missing (the tests for it are then absent, not silently passed).
 */
export function nixImpls(): NixImpl[] {
  const system = impl("system", "nix", "");
  if (!system) console.warn(NIX_MISSING_REASON);
  const m = modernNix();
  if (!m.impl) console.warn(`skipping the offline flake checks with a modern Nix: ${m.reason}`);
  return [system, m.impl].filter((i): i is NixImpl => i !== null);
}

/** The system's Nix (for tests that need only one). */
export const SYSTEM_NIX: NixImpl = {
  label: "system Nix",
  bin: "nix",
  version: "",
  storeRoot: "",
  allSystems: false,
};

/** Planted in the copy; none may reach a store path the flake builds from. */
export const DECOYS = [
  "node_modules/decoy-top/index.js",
  "packages/runner/node_modules/decoy-nested/index.js",
  "packages/runner/dist/decoy.js",
] as const;

export interface StubFlake {
  readonly dir: string;
  /** The Nix it is evaluated with. */
  readonly nixImpl: NixImpl;
  /** Where a store path printed by that Nix is on this machine (a private store is under a root). */
  realPath(storePath: string): string;
  /** `path:<dir>` */
  readonly ref: string;
  /** The override flags that point the flake's inputs at the stubs. */
  readonly overrideArgs: readonly string[];
  /** `nix eval --json <ref>#<attr> [--apply <fn>]`, parsed. Throws with nix's stderr on failure. */
  evalJson<T = unknown>(attr: string, apply?: string): Promise<T>;
  /** `nix eval --raw`. */
  evalRaw(attr: string, apply?: string): Promise<string>;
  /** Any nix subcommand against the copy with the stub overrides; never throws. */
  nix(
    args: readonly string[],
    timeoutMs?: number,
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  cleanup(): Promise<void>;
}

export const NIX_BASE_ARGS = [
  "--extra-experimental-features",
  "nix-command flakes",
  "--option",
  "substituters",
  "",
] as const;

/**
 * What a build against the stand-in nixpkgs needs from the modern Nix's private store, as
 * `scripts/nix-standin --print-options` gives them (one definition, the script's): no substituters,
 * no build hook, the host's tools visible read-only in the build sandbox (`sandbox-paths`: /usr and
 * friends, the toolchains above at their fixed paths), and `ssl-cert-file ""` (Nix would otherwise
 * bind an empty file over the host's CA bundle through the /etc/ssl bind).
 */
export const STANDIN_BUILD_ARGS: readonly string[] = execFileSync(
  "sh",
  [join(REPO_ROOT, "scripts/nix-standin"), "--print-options"],
  { encoding: "utf8", timeout: 60_000 },
)
  .replace(/\n$/, "")
  .split("\n");

/** STANDIN_BUILD_ARGS' options as nix.conf lines (NIX_CONFIG), for a `nix` the test does not call itself. */
export function standinNixConfig(): string {
  const lines: string[] = [];
  for (let i = 0; i < STANDIN_BUILD_ARGS.length; i++) {
    const a = STANDIN_BUILD_ARGS[i];
    if (a === "--option") {
      lines.push(`${STANDIN_BUILD_ARGS[i + 1]} = ${STANDIN_BUILD_ARGS[i + 2]}`);
      i += 2;
    } else if (a === "--max-jobs") {
      lines.push(`max-jobs = ${STANDIN_BUILD_ARGS[i + 1]}`);
      i += 1;
    }
  }
  return lines.join("\n");
}

/**
 * argv run where the store paths `nix` printed exist: the private store bound at /nix/store in a
 * mount namespace of its own (what `nix run` does for a diverted store), or as is for the
 * system's store. Needs root (mount) for a private store.
 */
export function inStore(nixImpl: NixImpl, argv: readonly string[]): { file: string; args: string[] } {
  if (nixImpl.storeRoot === "") return { file: argv[0] ?? "", args: argv.slice(1) };
  return {
    file: "unshare",
    args: [
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      'mount --bind "$0" /nix/store && exec "$@"',
      `${nixImpl.storeRoot}/nix/store`,
      ...argv,
    ],
  };
}

/** Copies the repository's files (tracked and untracked, not ignored) into a temp dir. */
export async function createStubFlake(
  options: {
    mutate?: (dir: string) => Promise<void>;
    nixImpl?: NixImpl;
    /** The nixpkgs the copy uses: the evaluation stub (default) or the stand-in that builds. */
    nixpkgs?: "stub" | "standin";
  } = {},
): Promise<StubFlake> {
  const tmp: TempDir = await makeTempDir("flakegym-flake-");
  const dir = join(tmp.path, "flake");
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  })
    .split("\0")
    .filter((f) => f !== "" && !f.split("/").includes("node_modules"));
  // All at once (libuv's thread pool bounds the file operations): half the time of one by one.
  await Promise.all(
    files.map(async (f) => {
      try {
        await cp(join(REPO_ROOT, f), join(dir, f), { recursive: false, force: true, verbatimSymlinks: true });
      } catch (e) {
        // deleted in the work tree but still in the index
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
    }),
  );
  for (const decoy of DECOYS) {
    await mkdir(join(dir, dirname(decoy)), { recursive: true });
    await writeFile(join(dir, decoy), "// must never reach the store\n");
  }
  await options.mutate?.(dir);

  const nixImpl = options.nixImpl ?? SYSTEM_NIX;
  const ref = `path:${dir}`;
  const overrideArgs = [
    "--no-write-lock-file",
    "--override-input",
    "nixpkgs",
    // the stand-in reads ../nixpkgs-formals.json, so its flake's source is tests/nix (a modern Nix)
    options.nixpkgs === "standin"
      ? `path:${dir}/tests/nix?dir=standin-nixpkgs`
      : `path:${dir}/tests/nix/stub-nixpkgs`,
    "--override-input",
    "ratatui",
    `path:${dir}/tests/nix/stub-ratatui`,
  ];

  const nix: StubFlake["nix"] = async (args, timeoutMs = 120_000) => {
    const r = await execa(nixImpl.bin, [...NIX_BASE_ARGS, ...args], {
      reject: false,
      timeout: timeoutMs,
      stdin: "ignore",
    });
    return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
  };
  const evalWith = async (mode: "--json" | "--raw", attr: string, apply?: string) => {
    const r = await nix([
      "eval",
      mode,
      ...overrideArgs,
      `${ref}#${attr}`,
      ...(apply ? ["--apply", apply] : []),
    ]);
    if (r.exitCode !== 0) {
      const err = r.stderr
        .split("\n")
        .filter((l) => !/^warning: not writing|^• Updated input|^\s+'|^\s+→/.test(l))
        .join("\n");
      throw new Error(`nix eval ${attr} failed (exit ${r.exitCode}):\n${err}`);
    }
    return r.stdout;
  };
  return {
    dir,
    nixImpl,
    realPath: (p) => `${nixImpl.storeRoot}${p}`,
    ref,
    overrideArgs,
    nix,
    async evalJson<T>(attr: string, apply?: string) {
      return JSON.parse(await evalWith("--json", attr, apply)) as T;
    },
    evalRaw: (attr, apply) => evalWith("--raw", attr, apply),
    cleanup: () => tmp.cleanup(),
  };
}
