import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SnapshotSpec } from "../../../packages/runner/src/snapshots/spec.js";
import type { StubFlake } from "./stub-flake.js";

/**
 * Small sources with third-party dependencies, one per profile whose snapshot vendors them
 * (nix/snapshot-deps), and the `lib.mkSnapshotImage` call the tests evaluate against the stub.
 * Nothing is fetched: the stub's derivations only record what the flake asks for.
 */

/** A syntactically valid SRI sha256 (the "fake hash" Nix users start from). */
export const FAKE_HASH = `sha256-${"A".repeat(43)}=`;

/** left-pad@1.3.0's integrity as npm publishes it. */
export const LEFT_PAD_INTEGRITY =
  "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQEqUrk+H12dk5kzeNbs2uAUNdFpjQtgo4Q4QLbf/hr4kfyA==";

export interface SnapshotSources {
  /** go.mod requiring a module */
  readonly go: string;
  /** package.json with a dev dependency, and its package-lock.json */
  readonly node: string;
  /** package.json with a dependency and no lock */
  readonly nodeNoLock: string;
  /** pyproject.toml declaring a dependency */
  readonly python: string;
}

export async function writeSnapshotSources(root: string): Promise<SnapshotSources> {
  const at = async (dir: string, files: Record<string, string>) => {
    await mkdir(join(root, dir), { recursive: true });
    for (const [name, text] of Object.entries(files)) await writeFile(join(root, dir, name), text);
    return join(root, dir);
  };
  const manifest = { name: "x", version: "1.0.0", devDependencies: { "left-pad": "1.3.0" } };
  return {
    go: await at("go", {
      "go.mod": "module example.com/x\n\ngo 1.22\n\nrequire (\n\tgolang.org/x/text v0.14.0\n)\n",
      "x.go": "package x\n",
    }),
    node: await at("node", {
      "package.json": JSON.stringify(manifest),
      "package-lock.json": JSON.stringify({
        name: "x",
        version: "1.0.0",
        lockfileVersion: 3,
        requires: true,
        packages: {
          "": manifest,
          "node_modules/left-pad": { version: "1.3.0", integrity: LEFT_PAD_INTEGRITY, dev: true },
        },
      }),
    }),
    nodeNoLock: await at("node-no-lock", { "package.json": JSON.stringify(manifest) }),
    python: await at("python", {
      "pyproject.toml": '[project]\nname = "x"\nversion = "1"\ndependencies = ["attrs==23.2.0"]\n',
    }),
  };
}

/**
 * `nix eval --json --impure <flake>#lib --apply 'lib: let img = lib.mkSnapshotImage {…}; in <body>'`
 * against the stub; `fields` are Nix expressions by argument name (`system` defaults).
 */
export function evalSnapshotImage(
  flake: StubFlake,
  fields: Record<string, string>,
  body: string,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const args = Object.entries({ system: '"x86_64-linux"', ...fields })
    .map(([k, v]) => `${k} = ${v};`)
    .join(" ");
  return flake.nix([
    "eval",
    "--json",
    "--impure",
    ...flake.overrideArgs,
    `${flake.ref}#lib`,
    "--apply",
    `lib: let img = lib.mkSnapshotImage { ${args} }; w = img.snapshot.workspace; in ${body}`,
  ]);
}

/** A runner snapshot spec's key inputs as the flake records them (`snapshot.keyInputs`). */
export function keyInputsOfSpec(
  spec: Pick<SnapshotSpec, "taskId" | "repo" | "commit" | "profile" | "install" | "smoke" | "network">,
): Record<string, unknown> {
  const { taskId, repo, commit, profile, install, smoke, network } = spec;
  return { task: taskId, repo, commit, profile, install, smoke, network };
}
