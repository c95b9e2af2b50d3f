import { execFileSync } from "node:child_process";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { NIX_MISSING_REASON, nixAvailable } from "./stub-flake.js";

const HAVE_NIX = nixAvailable();
if (!HAVE_NIX) console.warn(NIX_MISSING_REASON);

/** Every .nix file of the repository (tracked or new), outside node_modules. */
function nixFiles(): string[] {
  return execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.nix"],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
    },
  )
    .split("\0")
    .filter((f) => f !== "" && !f.split("/").includes("node_modules"));
}

describe.skipIf(!HAVE_NIX)("every .nix file parses (nix-instantiate --parse)", () => {
  it("parses flake.nix, nix/**, packages/profiles/nix/** and the test stubs", async () => {
    const files = nixFiles();
    expect(files).toEqual(
      expect.arrayContaining([
        "flake.nix",
        "nix/util.nix",
        "packages/profiles/nix/rust.nix",
        "tests/nix/stub-nixpkgs/default.nix",
      ]),
    );
    const failures: string[] = [];
    for (const f of files) {
      const r = await execa("nix-instantiate", ["--parse", f], {
        cwd: REPO_ROOT,
        reject: false,
        stdin: "ignore",
      });
      if (r.exitCode !== 0) failures.push(`${f}: ${r.stderr.trim()}`);
    }
    console.log(
      `nix-instantiate --parse: ${files.length - failures.length}/${files.length} .nix files parse`,
    );
    expect(failures).toEqual([]);
  });
});
