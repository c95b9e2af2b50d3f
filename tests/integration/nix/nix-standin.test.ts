import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { runningNixpkgs } from "../../../packages/runner/src/rollout/provenance.js";
import { CI_NIX, ciNix, modernNix, STANDIN_BUILD_ARGS } from "./stub-flake.js";

/**
 * `scripts/nix-standin`, the one documented way to run the flake against the stand-in nixpkgs:
 * the options it adds (the same the Nix tests build with), what it refuses, and a real evaluation
 * of the flake through it with the modern Nix.
 */
const SCRIPT = join(REPO_ROOT, "scripts/nix-standin");
const standin = (args: string[], timeout = 120_000, env: Record<string, string> = {}) =>
  execa("sh", [SCRIPT, ...args], { reject: false, timeout, stdin: "ignore", cwd: REPO_ROOT, env });

describe("scripts/nix-standin", () => {
  it("adds no cache, no build hook, the host's tools in the sandbox, and never empties the CA bundle", () => {
    const opt = (name: string) => STANDIN_BUILD_ARGS[STANDIN_BUILD_ARGS.indexOf(name) + 1];
    const option = (name: string) => {
      const i = STANDIN_BUILD_ARGS.findIndex(
        (a, j) => a === name && STANDIN_BUILD_ARGS[j - 1] === "--option",
      );
      return i < 0 ? undefined : STANDIN_BUILD_ARGS[i + 1];
    };
    expect(option("substituters")).toBe("");
    expect(option("build-hook")).toBe("");
    expect(option("ssl-cert-file")).toBe("");
    expect(option("sandbox-paths")?.split(" ").slice(0, 4)).toEqual(["/bin", "/usr", "/lib", "/lib64"]);
    expect(opt("--extra-experimental-features")).toBe("nix-command flakes");
  });

  it("refuses an unsupported nix command by name, before installing anything (exit 2)", async () => {
    const r = await standin(["store", "gc"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/nix-standin: unsupported nix command 'store'/);
    expect((await standin([])).exitCode).toBe(2);
    expect((await standin(["--help"])).stdout).toMatch(/scripts\/nix-standin run \.#rollout/);
  });

  it("a run records that its nixpkgs is the stand-in only when it runs from the store under the script", () => {
    expect(runningNixpkgs("/nix/store/abc-flakegym-0.1.0", { FLAKEGYM_NIXPKGS: "standin" })).toBe("standin");
    expect(runningNixpkgs(undefined, { FLAKEGYM_NIXPKGS: "standin" })).toBeUndefined();
    expect(runningNixpkgs("/nix/store/abc-flakegym-0.1.0", {})).toBeUndefined();
  });

  const modern = modernNix();
  it.skipIf(modern.impl === null)(
    `evaluates the flake's packages against the stand-in (${modern.reason || "modern Nix"})`,
    async () => {
      const r = await standin(
        ["eval", "--json", ".#packages.x86_64-linux", "--apply", "builtins.attrNames"],
        300_000,
      );
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/nixpkgs is the stand-in/);
      expect(JSON.parse(r.stdout)).toEqual(
        expect.arrayContaining(["flakegym-rollout", "rust-env-container"]),
      );
    },
  );

  it.skipIf(modern.impl === null)(
    `what it runs gets the same Nix (FLAKEGYM_NIX_BIN) and its options (NIX_CONFIG), never an empty CA bundle (${modern.reason || "modern Nix"})`,
    async () => {
      const env = (name: string) =>
        standin(["eval", "--raw", "--impure", "--expr", `builtins.getEnv "${name}"`], 120_000);
      const bin = await env("FLAKEGYM_NIX_BIN");
      expect(bin.exitCode, bin.stderr).toBe(0);
      expect(bin.stdout).toBe(modern.impl!.bin);
      const conf = (await env("NIX_CONFIG")).stdout;
      const printed = (await standin(["--print-nix-config"])).stdout.trim();
      expect(conf.trim()).toBe(printed);
      expect(printed.split("\n")).toEqual(
        expect.arrayContaining(["substituters = ", "build-hook = ", "ssl-cert-file = "]),
      );
      expect(printed).toMatch(/^sandbox-paths = \/bin \/usr \/lib \/lib64 /m);
    },
  );

  it.skipIf(modern.impl === null)(
    `a ratatui mirror without flake.lock's pinned commit is refused by Nix, naming the commit (${modern.reason || "modern Nix"})`,
    async () => {
      const tmp = await makeTempDir("flakegym-fake-mirror-");
      try {
        const repo = join(tmp.path, "ratatui+ratatui", "repo");
        const git = (...a: string[]) =>
          execa("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...a], { cwd: repo });
        await execa("git", ["init", "-q", repo]);
        await writeFile(join(repo, "Cargo.lock"), "# not ratatui\n");
        await git("add", ".");
        await git("commit", "-qm", "other tree");
        const r = await standin(
          ["eval", "--json", ".#packages.x86_64-linux", "--apply", "builtins.attrNames"],
          300_000,
          { FLAKEGYM_REPO_MIRROR: tmp.path },
        );
        expect(r.stderr).toMatch(/ratatui from the mirror .*ratatui\+ratatui\/repo \(rev=527e1df9/);
        expect(r.exitCode).not.toBe(0);
        expect(r.stderr).toMatch(/527e1df9296e4b6d56dc665788ce558558b480c6.*(not found|no match)/s);
      } finally {
        await tmp.cleanup();
      }
    },
  );

  /** `flake check --no-build --all-systems` through the script on a fresh, empty store. */
  const freshStoreCheck = async (env: Record<string, string>) => {
    const tmp = await makeTempDir("flakegym-fresh-store-");
    try {
      const args = [
        "flake",
        "check",
        "--no-build",
        "--all-systems",
        "--store",
        `local?root=${tmp.path}/store`,
      ];
      const r = await standin(args, 600_000, env);
      expect(r.exitCode, r.stderr.slice(-3000)).toBe(0);
      expect(r.stderr).toMatch(/checking derivation packages\.x86_64-linux\.snapshot-bytesize-unit-boundary/);
    } finally {
      await tmp.cleanup();
    }
  };
  it.skipIf(modern.impl === null)(
    `flake check --no-build passes on a fresh, empty store: evaluation reads no store copy it did not make (${modern.reason || "modern Nix"})`,
    () => freshStoreCheck({}),
    660_000,
  );

  it("CI installs the Nix the offline checks also run (every install-nix-action pin is CI_NIX's)", () => {
    const yml = readFileSync(join(REPO_ROOT, ".github/workflows/nix.yml"), "utf8");
    const pins = [...yml.matchAll(/uses:\s*(cachix\/install-nix-action@\S+)/g)].map((m) => m[1]);
    expect(pins.length).toBeGreaterThan(0);
    expect(new Set(pins)).toEqual(new Set([CI_NIX.action]));
    expect(yml).toContain(`grep -qx 'nix (Nix) ${CI_NIX.version}'`);
  });

  const ci = ciNix();
  it.skipIf(ci.bin === null)(
    `flake check --no-build passes on a fresh, empty store under CI's Nix ${CI_NIX.version} (${ci.reason || `Debian ${CI_NIX.suite}'s nix-bin`})`,
    () => freshStoreCheck({ FLAKEGYM_NIX_SUITE: CI_NIX.suite }),
    660_000,
  );
});
