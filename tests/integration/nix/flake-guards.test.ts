import { appendFile, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSemaphore } from "../../../packages/runner/src/workers/semaphore.js";
import {
  evalSnapshotImage,
  FAKE_HASH,
  type SnapshotSources,
  writeSnapshotSources,
} from "./snapshot-sources.js";
import { createStubFlake, type NixImpl, nixImpls, type StubFlake } from "./stub-flake.js";

// The offline checks must fail for the mistakes they exist to catch. Each case breaks one thing
// in a temp copy of the flake and expects evaluation to fail naming it.

// With every Nix we have (the system's 2.8 and a modern one); each prints why it is absent.
const IMPLS = nixImpls();

// Every case of every group (each a describe.concurrent) runs at once, two evaluations at a time:
// an evaluation keeps one core busy and vitest runs one file at a time, so two lanes use both
// cores (measured 15 s vs 36 s one by one, load 3).
const evaluations = createSemaphore(2);

async function evalError(
  nixImpl: NixImpl,
  mutate: (dir: string) => Promise<void>,
  attr: string,
): Promise<string> {
  return evaluations.with(undefined, async () => {
    const flake = await createStubFlake({ mutate, nixImpl });
    try {
      await flake.evalJson(attr, "x: builtins.deepSeq x true");
      return "";
    } catch (e) {
      return (e as Error).message;
    } finally {
      await flake.cleanup();
    }
  });
}

const edit = async (file: string, from: string, to: string) => {
  const text = await readFile(file, "utf8");
  if (!text.includes(from)) throw new Error(`${file} does not contain ${from}`);
  await writeFile(file, text.replace(from, to));
};

if (IMPLS.length === 0) it.skip("the flake's guards: no Nix here (the reason is printed above)", () => {});

for (const nixImpl of IMPLS) describeWith(nixImpl);

function describeWith(nixImpl: NixImpl) {
  describe.concurrent(`the flake refuses what it must refuse (${nixImpl.label})`, () => {
    it("fails when profiles.json defines a profile with no packages/profiles/nix/<id>.nix", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => rm(join(dir, "packages/profiles/nix/go.nix")),
        "devShells.x86_64-linux",
      );
      expect(err).toContain(
        'profiles.json defines profile(s) ["go"] but packages/profiles/nix/ has no <id>.nix',
      );
    });

    it("fails when packages/profiles/nix/ has a file for no profile id", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => writeFile(join(dir, "packages/profiles/nix/haskell.nix"), "pkgs: { packages = [ ]; }\n"),
        "packages.x86_64-linux",
      );
      expect(err).toContain(
        'packages/profiles/nix/ has ["haskell.nix"] but profiles.json defines no such profile id',
      );
    });

    it("fails on a nixpkgs attribute that does not exist", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => edit(join(dir, "packages/profiles/nix/rust.nix"), "pkgs.clippy", "pkgs.clipy"),
        "devShells.x86_64-linux",
      );
      expect(err).toMatch(/attribute 'clipy' missing/);
    });

    it("fails on an argument the nixpkgs function does not take", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => edit(join(dir, "nix/image.nix"), "layeringPipeline = [", "layeringPipline = ["),
        "packages.x86_64-linux.rust-env-container.drvPath",
      );
      expect(err).toMatch(/called with unexpected argument 'layeringPipline'/);
    });

    it("fails on a layering pipeline operation dockerTools does not have", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => edit(join(dir, "nix/image.nix"), '[ "flatten" ]', '[ "flaten" ]'),
        "packages.x86_64-linux.rust-env-container.drvPath",
      );
      expect(err).toContain("unknown layeringPipeline operation 'flaten'");
    });

    it("fails on a git dependency in Cargo.lock without outputHashes", async () => {
      const gitDep = [
        "",
        "[[package]]",
        'name = "unicode-truncate"',
        'version = "9.9.9"',
        'source = "git+https://example.invalid/unicode-truncate?rev=abc#0123456789abcdef0123456789abcdef01234567"',
        "",
      ].join("\n");
      const err = await evalError(
        nixImpl,
        (dir) => appendFile(join(dir, "tests/nix/stub-ratatui/Cargo.lock"), gitDep),
        "packages.x86_64-linux.snapshot-ratatui-2148.drvPath",
      );
      expect(err).toContain("No hash was found while vendoring the git dependency unicode-truncate-9.9.9");
    });

    it("fails on a profile whose packages collide in its buildEnv", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => edit(join(dir, "packages/profiles/nix/c.nix"), "ignoreCollisions = true;", ""),
        "packages.x86_64-linux.c-env-container.drvPath",
      );
      expect(err).toMatch(
        /buildEnv flakegym-c-env-toolchain: collision between gcc-wrapper and clang-wrapper for 'bin\/c\+\+'/,
      );
    });

    it("fails when the lock pins cline at another version than the vendored core", async () => {
      const err = await evalError(
        nixImpl,
        (dir) => edit(join(dir, "nix/cline.nix"), 'version = "1.0.10";', 'version = "1.0.11";'),
        "packages.x86_64-linux.flakegym.nodeModules.drvPath",
      );
      expect(err).toContain(
        "package-lock.json pins 'node_modules/cline' at 1.0.10 but its Nix override builds 1.0.11",
      );
    });
  });

  describe.concurrent(`lib.mkSnapshotImage refuses a snapshot it cannot pin (${nixImpl.label})`, () => {
    let flake: StubFlake;
    let srcs: SnapshotSources;
    beforeAll(async () => {
      flake = await createStubFlake({ nixImpl });
      srcs = await writeSnapshotSources(join(flake.dir, "..", "snapshot-sources"));
    });
    afterAll(async () => {
      await flake?.cleanup();
    });
    const pins = { task: '"t"', repo: '"https://example.invalid/t"', commit: `"${"0".repeat(40)}"` };
    const evalErr = async (fields: Record<string, string>) => {
      const r = await evaluations.with(undefined, () =>
        evalSnapshotImage(flake, { ...pins, ...fields }, "img.drvPath"),
      );
      expect(r.exitCode, "evaluation must fail").not.toBe(0);
      return r.stderr;
    };

    it("a go module that requires modules, without vendorHash", async () => {
      expect(await evalErr({ profile: '"go"', src: srcs.go })).toContain(
        "lib.mkSnapshotImage t: go.mod requires modules, so a go snapshot needs `vendorHash`",
      );
    });

    it("a misspelled pin (vendorSha256, buildGoModule's old name)", async () => {
      expect(await evalErr({ profile: '"go"', src: srcs.go, vendorSha256: `"${FAKE_HASH}"` })).toMatch(
        /called with unexpected argument 'vendorSha256'/,
      );
    });

    it("python dependencies without wheelsHash", async () => {
      expect(await evalErr({ profile: '"python"', src: srcs.python })).toContain(
        'the source declares Python dependencies (["attrs==23.2.0"]), so a python snapshot needs `wheelsHash`',
      );
    });

    it("node dependencies without a package-lock.json", async () => {
      expect(await evalErr({ profile: '"node"', src: srcs.nodeNoLock })).toContain(
        "package.json declares 1 dependencies but the source has no package-lock.json",
      );
    });

    it("a profile profiles.json does not define", async () => {
      expect(await evalErr({ profile: '"haskell"', src: srcs.go })).toContain("no profile 'haskell'");
    });
  });
}
