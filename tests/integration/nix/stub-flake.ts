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

/** Does this machine have a `nix` that can evaluate flakes? (scripts/ensure-system-deps installs it) */
export function nixAvailable(): boolean {
  try {
    execFileSync("nix", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export const NIX_MISSING_REASON =
  "skipping the offline flake checks: `nix` is not installed (sh scripts/ensure-system-deps installs nix-bin)";

/** Planted in the copy; none may reach a store path the flake builds from. */
export const DECOYS = [
  "node_modules/decoy-top/index.js",
  "packages/runner/node_modules/decoy-nested/index.js",
  "packages/runner/dist/decoy.js",
] as const;

export interface StubFlake {
  readonly dir: string;
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

/** Copies the repository's files (tracked and untracked, not ignored) into a temp dir. */
export async function createStubFlake(
  options: { mutate?: (dir: string) => Promise<void> } = {},
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
  for (const f of files) {
    try {
      await cp(join(REPO_ROOT, f), join(dir, f), { recursive: false, force: true, verbatimSymlinks: true });
    } catch (e) {
      // deleted in the work tree but still in the index
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
  for (const decoy of DECOYS) {
    await mkdir(join(dir, dirname(decoy)), { recursive: true });
    await writeFile(join(dir, decoy), "// must never reach the store\n");
  }
  await options.mutate?.(dir);

  const ref = `path:${dir}`;
  const overrideArgs = [
    "--no-write-lock-file",
    "--override-input",
    "nixpkgs",
    `path:${dir}/tests/nix/stub-nixpkgs`,
    "--override-input",
    "ratatui",
    `path:${dir}/tests/nix/stub-ratatui`,
  ];

  const nix: StubFlake["nix"] = async (args, timeoutMs = 120_000) => {
    const r = await execa("nix", [...NIX_BASE_ARGS, ...args], {
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
