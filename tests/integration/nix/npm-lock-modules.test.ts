import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { createStubFlake, NIX_MISSING_REASON, nixAvailable } from "./stub-flake.js";

// The shell side of nix/npm-lock-modules.nix (unpack / link_dir / bin_link, then `linkInto`) only
// runs in a real Nix build. Here it runs for real on a few entries of the actual install script,
// with the fixed-output tarballs replaced by the same tarballs from npm's cache (`npm pack`).

const HAVE_NIX = nixAvailable();
if (!HAVE_NIX) console.warn(NIX_MISSING_REASON);

const PICK = [
  "node_modules/ts-pattern",
  "node_modules/tsx",
  "node_modules/@esbuild/linux-x64",
  "node_modules/cline",
];

describe.skipIf(!HAVE_NIX)("node_modules assembly (nix/npm-lock-modules.nix shell code)", () => {
  it("unpacks entries where the lock puts them, links bins, the override and the workspaces", async () => {
    const flake = await createStubFlake();
    let nm: { tree: string; buildCommand: string; installScript: string; linkInto: string };
    try {
      nm = await flake.evalJson(
        "packages.x86_64-linux.flakegym.nodeModules",
        `t: { tree = "\${t}"; buildCommand = t.stub.args.buildCommand; installScript = t.stub.args.installScript; linkInto = t.linkInto "$ROOT"; }`,
      );
    } finally {
      await flake.cleanup();
    }
    await using tmp = await makeTempDir("flakegym-node-modules-");
    const packs = join(tmp.path, "packs");
    const fakeCline = join(tmp.path, "cline-core/lib/cline");
    await mkdir(packs);
    await mkdir(fakeCline, { recursive: true });
    await writeFile(join(fakeCline, "package.json"), '{"name":"cline","version":"1.0.10"}');

    // the install script's lines for the picked entries, tarballs swapped for local ones
    const lines = nm.installScript.split("\n");
    const script: string[] = [];
    for (const key of PICK) {
      const line = lines.find((l) => l.startsWith(`unpack '${key}' `) || l.startsWith(`link_dir '${key}' `));
      expect(line, `install line for ${key}`).toBeDefined();
      if (line!.startsWith("link_dir")) {
        script.push(line!.replace(/\/nix\/store\/\S+$/, fakeCline));
        continue;
      }
      const spec = line!.match(/-npm-(.+)\.tgz$/)![1]!; // storeName of name + "-" + version
      const version = spec.slice(spec.lastIndexOf("-") + 1);
      const name = key.slice("node_modules/".length);
      const r = await execa("npm", ["pack", `${name}@${version}`, "--prefer-offline", "--silent"], {
        cwd: packs,
      });
      script.push(line!.replace(/\/nix\/store\/\S+$/, join(packs, r.stdout.trim().split("\n").at(-1)!)));
    }
    script.push(...lines.filter((l) => l.startsWith("bin_link 'tsx' ")));
    const scriptFile = join(tmp.path, "install.sh");
    await writeFile(scriptFile, `${script.join("\n")}\n`);

    const tree = join(tmp.path, "tree");
    const built = await execa("bash", ["-euo", "pipefail", "-c", nm.buildCommand], {
      env: { out: tree, installScriptPath: scriptFile, PATH: process.env["PATH"] },
      extendEnv: false,
      reject: false,
    });
    expect(built.exitCode, built.stderr).toBe(0);
    expect(built.stdout).toContain("installed 4 packages");
    expect(existsSync(join(tree, "node_modules/ts-pattern/package.json"))).toBe(true);
    expect(existsSync(join(tree, "node_modules/@esbuild/linux-x64/bin/esbuild"))).toBe(true);
    expect(readlinkSync(join(tree, "node_modules/cline"))).toBe(fakeCline);
    expect(readlinkSync(join(tree, "node_modules/.bin/tsx"))).toBe("../tsx/dist/cli.mjs");

    // a workspace root holding only packages/runner gets node_modules linked to the tree
    const root = join(tmp.path, "app");
    await mkdir(join(root, "packages/runner"), { recursive: true });
    await writeFile(
      join(root, "packages/runner/index.mjs"),
      'import { match } from "ts-pattern"; console.log(typeof match);',
    );
    const linked = await execa("bash", ["-euo", "pipefail", "-c", nm.linkInto.replaceAll(nm.tree, tree)], {
      env: { ROOT: root, PATH: process.env["PATH"] },
      extendEnv: false,
      reject: false,
    });
    expect(linked.exitCode, linked.stderr).toBe(0);
    expect(readlinkSync(join(root, "node_modules/ts-pattern"))).toBe(join(tree, "node_modules/ts-pattern"));
    expect(lstatSync(join(root, "node_modules/@esbuild")).isDirectory()).toBe(true); // scopes are real dirs
    expect(readlinkSync(join(root, "node_modules/@flakegym/runner"))).toBe("../../packages/runner");
    expect(
      existsSync(join(root, "node_modules/@flakegym/test-utils")),
      "no link to an absent workspace",
    ).toBe(false);
    const run = await execa(process.execPath, [join(root, "packages/runner/index.mjs")]);
    expect(run.stdout).toBe("function");
  }, 60_000);
});
