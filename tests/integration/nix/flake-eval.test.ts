import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { loadProfiles } from "@flakegym/profiles";
import { REPO_ROOT } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeOutputsOf } from "../../../packages/runner/src/nix/store-outputs.js";
import { SNAPSHOT_FORMAT } from "../../../packages/runner/src/snapshots/key.js";
import { snapshotSpecOfTask } from "../../../packages/runner/src/snapshots/spec.js";
import { loadCatalog, loadTask } from "../../../packages/runner/src/tasks/catalog.js";
import {
  evalSnapshotImage,
  FAKE_HASH,
  keyInputsOfSpec,
  LEFT_PAD_INTEGRITY,
  writeSnapshotSources,
} from "./snapshot-sources.js";
import { createStubFlake, DECOYS, type NixImpl, nixImpls, type StubFlake } from "./stub-flake.js";

// Offline structure checks of flake.nix: the flake is evaluated with real Nix against a stub of
// nixpkgs whose functions record their arguments (tests/nix/stub-nixpkgs). It checks structure,
// not builds: wrong attribute names, missing outputs, or a profile set that disagrees with
// profiles.json fail here; whether the images build is for CI on a machine with a Nix cache.

// Run with every Nix we have: the system's (Debian 12's 2.8) and a modern one (trixie's 2.26,
// scripts/ensure-modern-nix), each printing why it is absent.
const IMPLS = nixImpls();
/** The catalog tasks whose source is in this repository: the flake has a snapshot image of each. */
const localCatalogTaskIds = async () =>
  (await loadCatalog()).filter((t) => t.spec.source.kind === "local").map((t) => t.spec.id);

const LINUX = ["x86_64-linux", "aarch64-linux"] as const;
const ALL_SYSTEMS = [...LINUX, "x86_64-darwin", "aarch64-darwin"] as const;
const profiles = loadProfiles().profiles;
const nixNames = Object.values(profiles)
  .map((p) => p.nixName)
  .sort();

interface ImageInfo {
  fn: string | null;
  imageName: string | null;
  contents: string[];
  layering: unknown[] | null;
  entrypoint: string[] | null;
  labels: Record<string, string> | null;
  env: string[] | null;
  clineLayer: string | null;
  profile: string | null;
  toolchain: string[] | null;
  extraCommands: string | null;
}

const IMAGE_INFO = `ps: builtins.mapAttrs (n: p: {
  fn = p.stub.fn or null;
  imageName = p.imageName or null;
  contents = map (c: c.name) (p.stub.args.contents or [ ]);
  layering = p.stub.args.layeringPipeline or null;
  entrypoint = p.stub.args.config.Entrypoint or null;
  labels = p.stub.args.config.Labels or null;
  env = p.stub.args.config.Env or null;
  clineLayer = p.clineLayer or null;
  profile = if p ? profile then p.profile.id else null;
  toolchain = if p ? profile then map (x: x.name) p.profile.toolchain.stub.args.paths else null;
  extraCommands = p.stub.args.extraCommands or null;
}) ps`;

/** Every file under a store path, relative to it. */
function listFiles(root: string): string[] {
  return (readdirSync(root, { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[])
    .filter((d) => !d.isDirectory())
    .map((d) => relative(root, join(d.parentPath, d.name)));
}

if (IMPLS.length === 0)
  it.skip("flake.nix offline checks: no Nix here (the reason is printed above)", () => {});

for (const nixImpl of IMPLS) describeWith(nixImpl);

function describeWith(nixImpl: NixImpl) {
  describe(`flake.nix evaluated against the nixpkgs stub with ${nixImpl.label}`, () => {
    let flake: StubFlake;
    const ran: string[] = [];
    const check = (name: string) => ran.push(name);
    const images: Record<string, Record<string, ImageInfo>> = {};

    beforeAll(async () => {
      flake = await createStubFlake({ nixImpl });
      for (const sys of LINUX) images[sys] = await flake.evalJson(`packages.${sys}`, IMAGE_INFO);
    });
    afterAll(async () => {
      await flake?.cleanup();
      console.log(
        `offline flake checks run with ${nixImpl.label} (${ran.length}):\n${ran.map((r) => `  ✓ ${r}`).join("\n")}`,
      );
    });

    it("has a devShell per profile on every system, holding the profile's packages", async () => {
      const shells = await flake.evalJson<
        Record<string, Record<string, { fn: string; packages: string[]; profile: string }>>
      >(
        "devShells",
        `ds: builtins.mapAttrs (sys: shells: builtins.mapAttrs (n: s: {
        fn = s.stub.fn; packages = map (p: p.name) s.stub.args.packages; profile = s.stub.args.FLAKEGYM_PROFILE or null;
      }) shells) ds`,
      );
      expect(Object.keys(shells).sort()).toEqual([...ALL_SYSTEMS].sort());
      for (const sys of ALL_SYSTEMS) {
        expect(Object.keys(shells[sys]!).sort(), sys).toEqual([...nixNames, "default"].sort());
        expect(shells[sys]!["default"]!.packages).toEqual(
          expect.arrayContaining(["nodejs-24.0.0-stub", "nixfmt", "git"]),
        );
        for (const [id, p] of Object.entries(profiles)) {
          const shell = shells[sys]![p.nixName]!;
          expect(shell.fn).toBe("mkShell");
          expect(shell.profile).toBe(id);
          expect(shell.packages, `${sys} ${p.nixName}`).toContain("git"); // dev-base is in every profile
        }
      }
      expect(shells["x86_64-linux"]!["rust-env"]!.packages).toEqual(
        expect.arrayContaining(["rustc-wrapper", "cargo", "clippy", "rustfmt"]),
      );
      expect(shells["x86_64-linux"]!["c-env"]!.packages).toContain("valgrind");
      expect(shells["aarch64-darwin"]!["c-env"]!.packages).not.toContain("valgrind");
      check(`devShells.<system>.<nixName> for ${ALL_SYSTEMS.length} systems × ${nixNames.length} profiles`);
    });

    it("has a -container per profile on each Linux system, with toolchain, Node, the Cline layer and the worker entrypoint", () => {
      for (const sys of LINUX) {
        const pkgs = images[sys]!;
        for (const [id, p] of Object.entries(profiles)) {
          const img = pkgs[`${p.nixName}-container`];
          expect(img, `${sys}: packages.${p.nixName}-container`).toBeDefined();
          expect(img!.fn).toBe("dockerTools.streamLayeredImage");
          expect(img!.imageName).toBe(`flakegym/${p.nixName}`);
          expect(img!.profile).toBe(id);
          expect(img!.contents).toEqual(
            expect.arrayContaining([
              `flakegym-${p.nixName}-toolchain`,
              "nodejs-24.0.0-stub",
              "cline-core-1.0.10",
              "flakegym-worker",
            ]),
          );
          expect(img!.entrypoint).toEqual([expect.stringMatching(/-flakegym-worker\/bin\/flakegym-worker$/)]);
          expect(img!.labels).toMatchObject({
            "org.flakegym.profile": id,
            "org.flakegym.cline.version": "1.0.10",
          });
          expect(img!.env).toEqual(expect.arrayContaining([`FLAKEGYM_PROFILE=${id}`, "PATH=/bin:/usr/bin"]));
          expect(img!.toolchain).toEqual(expect.arrayContaining(["git", "ripgrep", "coreutils"]));
        }
        expect(pkgs["rust-env-container"]!.toolchain).toEqual(
          expect.arrayContaining(["cargo", "clippy", "rustfmt"]),
        );
        expect(pkgs["python-env-container"]!.toolchain).toEqual(
          expect.arrayContaining(["python3-3.13-env", "poetry", "pdm"]),
        );
        expect(pkgs["node-env-container"]!.toolchain).toEqual(
          expect.arrayContaining(["pnpm", "yarn", "eslint", "prettier"]),
        );
        expect(pkgs["go-env-container"]!.toolchain).toEqual(expect.arrayContaining(["go", "gotestsum"]));
        expect(pkgs["c-env-container"]!.toolchain).toEqual(
          expect.arrayContaining(["gcc-wrapper", "clang-wrapper", "gnumake", "cmake", "ninja", "valgrind"]),
        );
      }
      check(
        `packages.<linux>.<nixName>-container for ${nixNames.length} profiles, with toolchain + Node + Cline + entrypoint`,
      );
    });

    it("gives the Cline core its own layer, the same store path in every image", () => {
      const clinePaths = new Set<string>();
      for (const sys of LINUX) {
        const perSystem = new Set<string>();
        for (const [name, img] of Object.entries(images[sys]!)) {
          if (img.fn !== "dockerTools.streamLayeredImage") continue;
          expect(img.clineLayer, name).toMatch(/-cline-core-1\.0\.10$/);
          perSystem.add(img.clineLayer!);
          // the pipeline's first stage splits off exactly the Cline core
          expect(img.layering?.[0], name).toEqual(["split_paths", [img.clineLayer]]);
          expect(img.layering?.at(-1), name).toEqual(["limit_layers", 99]);
        }
        expect(perSystem.size, `${sys}: one Cline derivation shared by all images`).toBe(1);
        for (const p of perSystem) clinePaths.add(p);
      }
      expect(clinePaths.size, "x86_64 and aarch64 build their own Cline core").toBe(2);
      check("every image splits the one Cline core store path into its own layer");
    });

    it("builds snapshot-ratatui-2148 from the ratatui input with importCargoLock and a pre-built target/", async () => {
      const snap = await flake.evalJson<{
        keyInputs: Record<string, unknown>;
        keyFile: string;
        keySpec: string;
        src: string;
        lockFile: string;
        cargoFn: string;
        lockPackages: string[];
        vendoredCrates: string[];
        cargoDepsPath: string;
        cargoConfig: string;
        buildPhase: string;
        installPhase: string;
        nativeBuildInputs: string[];
        extraCommands: string;
        labels: Record<string, string>;
        env: string[];
        contents: string[];
      }>(
        "packages.x86_64-linux.snapshot-ratatui-2148",
        `s: let w = s.snapshot.workspace; d = w.stub.args.cargoDeps; in {
        inherit (s.snapshot) keyInputs keyFile;
        keySpec = w.stub.args.keySpec;
        src = "\${w.stub.args.src}";
        lockFile = d.stub.args.lockFile; cargoFn = d.stub.fn; lockPackages = d.lockPackages; vendoredCrates = d.vendoredCrates;
        cargoDepsPath = "\${d}";
        cargoConfig = w.stub.args.cargoConfig;
        buildPhase = w.stub.args.buildPhase;
        installPhase = w.stub.args.installPhase;
        nativeBuildInputs = map (p: p.name) w.stub.args.nativeBuildInputs;
        extraCommands = s.stub.args.extraCommands;
        labels = s.stub.args.config.Labels;
        env = s.stub.args.config.Env;
        contents = map (c: c.name) s.stub.args.contents;
      }`,
      );
      // the ratatui input (here: the stand-in) is the source, and its own Cargo.lock is vendored
      expect(readFileSync(join(flake.realPath(snap.src), "Cargo.toml"), "utf8")).toContain(
        'name = "ratatui-stub"',
      );
      expect(snap.cargoFn).toBe("rustPlatform.importCargoLock");
      expect(snap.lockFile).toBe(`${snap.src}/Cargo.lock`);
      // ratatui's real Cargo.lock at the pinned rev: 515 packages, 473 of them crates to vendor
      expect(snap.lockPackages).toHaveLength(515);
      expect(snap.lockPackages).toEqual(expect.arrayContaining(["ratatui@0.30.2", "ratatui-widgets@0.3.2"]));
      expect(snap.vendoredCrates).toHaveLength(473);
      expect(snap.cargoConfig).toContain(`directory = "${snap.cargoDepsPath}"`);
      expect(snap.buildPhase).toContain('cp "$cargoConfigPath" "$CARGO_HOME/config.toml"');
      expect(snap.buildPhase).toContain("cargo test --workspace --no-run --locked --offline");
      expect(snap.buildPhase).toContain("git init");
      expect(snap.installPhase).toContain("cp -a . $out/workspace");
      expect(snap.nativeBuildInputs).toEqual(
        expect.arrayContaining(["cargo", "rustc-wrapper", "git", "nodejs-24.0.0-stub"]),
      );
      expect(snap.extraCommands).toMatch(/cp -a \S+-workspace\/workspace\/\. workspace\//);
      expect(snap.extraCommands).toMatch(/cp \S+-workspace\/snapshot\.json flakegym\/snapshot\.json/);
      expect(snap.contents).toEqual(
        expect.arrayContaining(["cline-core-1.0.10", "flakegym-rust-env-toolchain"]),
      );
      expect(snap.env).toEqual(
        expect.arrayContaining(["CARGO_HOME=/cargo-home", "FLAKEGYM_SNAPSHOT_FILE=/flakegym/snapshot.json"]),
      );
      expect(snap.labels).toMatchObject({
        "org.flakegym.snapshot.key-file": "/flakegym/snapshot.json",
        "org.flakegym.snapshot.repo": "https://github.com/ratatui/ratatui",
        "org.flakegym.snapshot.commit": "527e1df9296e4b6d56dc665788ce558558b480c6",
        "org.flakegym.snapshot.profile": "rust",
        "org.flakegym.snapshot.network": "none",
        "org.flakegym.snapshot.format": "1",
      });
      check(
        "snapshot-ratatui-2148: ratatui input + importCargoLock on its real Cargo.lock (515 packages) + prebuilt target/ in /workspace",
      );

      // The key is computed in the build by nix/snapshot-key.mjs from these inputs; the toolchain
      // identity comes from the profile's profiles.json smoke commands, as the runner measures it.
      expect(JSON.parse(snap.keySpec)).toEqual({
        task: "ratatui-2148",
        format: 1,
        repo: "https://github.com/ratatui/ratatui",
        commit: "527e1df9296e4b6d56dc665788ce558558b480c6",
        profile: "rust",
        install: ["cargo test --workspace --no-run --locked --offline"],
        smoke: [],
        network: "none",
        toolchainCommands: profiles.rust.smoke,
      });
      expect(snap.keyInputs).toEqual(JSON.parse(snap.keySpec));
      expect(snap.buildPhase).toMatch(/node \S+-snapshot-key\.mjs "\$keySpecPath"/);
      check(
        "snapshot key inputs (the runner's scheme) reach nix/snapshot-key.mjs in the build; key file in the image",
      );
    });

    it("has a snapshot-<task> package for every local catalog task, with the runner's key inputs", async () => {
      const tasks = (await loadCatalog()).filter((t) => t.spec.source.kind === "local");
      const keys = await flake.evalJson<Record<string, Record<string, unknown>>>(
        "packages.x86_64-linux",
        `ps: builtins.mapAttrs (n: p: removeAttrs p.snapshot.keyInputs [ "format" "toolchainCommands" ]) (removeAttrs ps (builtins.filter (n: builtins.substring 0 9 n != "snapshot-" || n == "snapshot-ratatui-2148") (builtins.attrNames ps)))`,
      );
      expect(Object.keys(keys).sort()).toEqual(tasks.map((t) => `snapshot-${t.spec.id}`).sort());
      for (const t of tasks) {
        const spec = snapshotSpecOfTask(t);
        expect(keys[`snapshot-${spec.taskId}`]).toEqual(keyInputsOfSpec(spec));
      }
      check(`snapshot-<task> for the ${tasks.length} local catalog tasks, key inputs as snapshotSpecOfTask`);
    });

    it("lib.mkSnapshotImage builds a catalog task's snapshot image with the runner's key inputs and labels", async () => {
      const task = await loadTask("tinygauge-vertical");
      const spec = snapshotSpecOfTask(task);
      const src = join(flake.dir, "packages/runner/catalog/tinygauge-vertical/repo");
      const call = (extra: string) => `lib: let img = lib.mkSnapshotImage {
        system = "x86_64-linux"; task = ${JSON.stringify(spec.taskId)};
        repo = ${JSON.stringify(spec.repo)}; commit = ${JSON.stringify(spec.commit)};
        profile = ${JSON.stringify(spec.profile)}; network = ${JSON.stringify(spec.network)};
        install = builtins.fromJSON ${JSON.stringify(JSON.stringify(spec.install))};
        smoke = builtins.fromJSON ${JSON.stringify(JSON.stringify(spec.smoke))};
        ${extra}
      }; in { labels = img.stub.args.config.Labels; keyInputs = img.snapshot.keyInputs; drv = img.drvPath; }`;
      const r = await flake.nix([
        "eval",
        "--json",
        "--impure",
        ...flake.overrideArgs,
        `${flake.ref}#lib`,
        "--apply",
        call(`src = ${src};`),
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as {
        labels: Record<string, string>;
        keyInputs: Record<string, unknown>;
      };
      const runnerInputs = { format: SNAPSHOT_FORMAT, ...keyInputsOfSpec(spec) };
      // the key computed in the build hashes these (plus the toolchain measured there): the runner's
      expect(out.keyInputs).toMatchObject(runnerInputs);
      expect(out.labels).toMatchObject({
        "org.flakegym.task": spec.taskId,
        "org.flakegym.snapshot.format": String(SNAPSHOT_FORMAT),
        "org.flakegym.snapshot.repo": spec.repo,
        "org.flakegym.snapshot.commit": spec.commit,
        "org.flakegym.snapshot.profile": spec.profile,
        "org.flakegym.snapshot.install": JSON.stringify(spec.install),
        "org.flakegym.snapshot.smoke": JSON.stringify(spec.smoke),
        "org.flakegym.snapshot.network": spec.network,
      });

      const noPin = await flake.nix([
        "eval",
        "--json",
        "--impure",
        ...flake.overrideArgs,
        `${flake.ref}#lib`,
        "--apply",
        call(""),
      ]);
      expect(noPin.stderr).toContain("lib.mkSnapshotImage tinygauge-vertical: give `narHash`");
      check(
        "lib.mkSnapshotImage (tinygauge-vertical): key inputs and labels = the runner's snapshot spec; pins required",
      );
    });

    it("lib.mkSnapshotImage vendors each profile's dependencies offline (go mod vendor, npm lock, wheel set; none for c)", async () => {
      const srcs = await writeSnapshotSources(join(flake.dir, "..", "snapshot-sources"));
      const pins = { task: '"t"', repo: '"https://example.invalid/t"', commit: `"${"0".repeat(40)}"` };
      const evalOk = async <T>(fields: Record<string, string>, body: string): Promise<T> => {
        const r = await evalSnapshotImage(flake, { ...pins, ...fields }, body);
        expect(r.exitCode, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as T;
      };
      const common = `kind = w.kind; build = w.stub.args.buildPhase; install = w.stub.args.installPhase;
        env = img.stub.args.config.Env; extra = img.stub.args.extraCommands;
        label = img.stub.args.config.Labels."org.flakegym.snapshot.deps"; drv = img.drvPath;`;
      interface Common {
        kind: string;
        build: string;
        install: string;
        env: string[];
        extra: string;
        label: string;
      }

      const go = await evalOk<
        Common & { mod: { outputHash: string; outputHashMode: string; buildPhase: string; src: string } }
      >(
        { profile: '"go"', src: srcs.go, vendorHash: `"${FAKE_HASH}"` },
        `{ ${common} mod = { inherit (w.goModules.stub.args) outputHash outputHashMode buildPhase; src = "\${w.goModules.stub.args.src}"; }; }`,
      );
      expect(go.kind).toBe("go-mod-vendor");
      expect(go.label).toBe("go-mod-vendor");
      // a fixed-output derivation pinned by vendorHash runs `go mod vendor` on the pinned source
      expect(go.mod.outputHash).toBe(FAKE_HASH);
      expect(go.mod.outputHashMode).toBe("recursive");
      expect(go.mod.buildPhase).toContain("go mod vendor");
      expect(readFileSync(join(flake.realPath(go.mod.src), "go.mod"), "utf8")).toContain("golang.org/x/text");
      // the work tree gets vendor/ (outside git) and the profile's GOFLAGS=-mod=vendor uses it
      expect(go.build).toContain('cp -r --no-preserve=mode "$goModules" vendor');
      expect(go.build).toContain("echo '/vendor' >> .git/info/exclude");
      expect(go.build).toContain("export GOFLAGS='-mod=vendor'");
      expect(go.env).toContain("GOFLAGS=-mod=vendor");

      const node = await evalOk<Common & { keys: string[]; fetched: Record<string, string> }>(
        { profile: '"node"', src: srcs.node },
        `{ ${common} keys = w.nodeModules.keys; fetched = builtins.mapAttrs (k: d: d.stub.args.outputHash) w.nodeModules.fetched; }`,
      );
      expect(node.kind).toBe("npm-lock");
      // dev dependencies included, each fetched by name with the lock's integrity as its hash
      expect(node.keys).toEqual(["node_modules/left-pad"]);
      expect(node.fetched).toEqual({ "node_modules/left-pad": LEFT_PAD_INTEGRITY });
      expect(node.build).toMatch(/for e in \S+-flakegym-snapshot-t-node-modules\/node_modules\/\*/);
      expect(node.build).toContain("echo '/node_modules' >> .git/info/exclude");

      const py = await evalOk<Common & { wheels: Record<string, string> }>(
        { profile: '"python"', src: srcs.python, wheelsHash: `"${FAKE_HASH}"` },
        `{ ${common} wheels = { inherit (w.wheels.stub.args) outputHash outputHashMode buildPhase; }; }`,
      );
      expect(py.kind).toBe("wheels");
      expect(py.wheels.outputHash).toBe(FAKE_HASH);
      expect(py.wheels.buildPhase).toContain("pip download");
      expect(py.wheels.buildPhase).toContain("'attrs==23.2.0'");
      expect(py.build).toContain('pip install --disable-pip-version-check --no-index --find-links "$wheels"');
      expect(py.install).toContain('cp -a "$TMPDIR/python-deps" $out/python-deps');
      expect(py.extra).toMatch(/cp -a \S+-workspace\/python-deps python-deps/);
      expect(py.env).toContain("PYTHONPATH=/python-deps");

      // catalog tasks of go, node, python and c have no third-party dependencies: nothing to vendor
      for (const [id, profile] of [
        ["truncate-runes", "go"],
        ["semver-lite-caret-zero", "node"],
        ["tinyini-interpolation", "python"],
        ["strbuf-repr-escapes", "c"],
      ] as const) {
        const src = join(flake.dir, `packages/runner/catalog/${id}/repo`);
        const none = await evalOk<Common>(
          { profile: `"${profile}"`, src, install: '[ "true" ]' },
          `{ ${common} }`,
        );
        expect(none.kind, id).toBe("none");
        expect(none.build, id).toContain("echo + 'true'\ntrue");
      }
      check(
        "lib.mkSnapshotImage per profile: go mod vendor by vendorHash, npm lock by integrity, wheels by wheelsHash, none for catalog go/node/python/c",
      );
    });

    it("builds the runner from a filtered source, with node_modules fetched per lock entry by integrity", async () => {
      const runner = await flake.evalJson<{
        fn: string;
        src: string;
        installPhase: string;
        keys: string[];
        installScript: string;
        fetched: Record<
          string,
          { spec: string; outputHash: string; outputHashMode: string; fn: string; impure: string[] }
        >;
      }>(
        "packages.x86_64-linux.flakegym",
        `r: {
        fn = r.stub.fn; src = "\${r.stub.args.src}"; installPhase = r.stub.args.installPhase;
        keys = r.nodeModules.keys; installScript = r.nodeModules.stub.args.installScript;
        fetched = builtins.mapAttrs (k: d: {
          inherit (d.stub.args) spec outputHash outputHashMode; fn = d.stub.fn; impure = d.stub.args.impureEnvVars;
        }) r.nodeModules.fetched;
      }`,
      );

      // filtered source: what the runner needs, none of the decoys or unrelated files
      const files = listFiles(flake.realPath(runner.src));
      expect(files).toEqual(
        expect.arrayContaining([
          "package-lock.json",
          "packages/runner/bin/flakegym.js",
          "packages/profiles/profiles.json",
        ]),
      );
      for (const decoy of DECOYS) expect(files).not.toContain(decoy);
      expect(files.filter((f) => f.split("/").includes("node_modules"))).toEqual([]);
      expect(
        files.filter((f) => /^packages\/[^/]+\/test\//.test(f) || f.startsWith("packages/profiles/nix/")),
      ).toEqual([]);
      // a catalog task's repository keeps its test/ dir (only the packages' unit tests are dropped)
      expect(files).toContain("packages/runner/catalog/semver-lite-caret-zero/repo/test/semver.test.mjs");
      expect(files.filter((f) => /^(flake\.|nix\/|docs\/|tests\/|\.github\/)/.test(f))).toEqual([]);
      check(`runner source is filtered (${files.length} files; no node_modules, dist, tests, nix)`);

      // the runtime node_modules: every production lock entry for linux/x64, nothing else
      const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as {
        packages: Record<string, Record<string, unknown>>;
      };
      const entries = lock.packages;
      // npm's os/cpu/libc lists: allowed values, or "!value" exclusions
      const allows = (list: unknown, value: string) => {
        if (!Array.isArray(list)) return true;
        const excluded = list.filter((v: string) => v.startsWith("!"));
        const allowed = list.filter((v: string) => !v.startsWith("!"));
        return (allowed.length === 0 || allowed.includes(value)) && !excluded.includes(`!${value}`);
      };
      const selfWanted = (k: string) => {
        const e = entries[k]!;
        return (
          k.includes("node_modules/") &&
          !e["link"] &&
          !e["inBundle"] &&
          !e["dev"] &&
          allows(e["os"], "linux") &&
          allows(e["cpu"], "x64") &&
          allows(e["libc"], "glibc")
        );
      };
      const ancestors = (k: string) => {
        const parts = k.split("/node_modules/");
        return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/node_modules/"));
      };
      const expected = Object.keys(entries)
        .filter((k) => selfWanted(k) && ancestors(k).every((a) => entries[a] && selfWanted(a)))
        .sort();
      expect(runner.keys).toEqual(expected);
      expect(runner.keys).toContain("node_modules/@esbuild/linux-x64");
      expect(runner.keys).not.toContain("node_modules/@esbuild/darwin-arm64");
      expect(runner.keys.filter((k) => k.startsWith("node_modules/cline/node_modules/"))).toEqual([]);
      check(`runtime node_modules = the ${expected.length} production lock entries for linux/x64`);

      // one fixed-output derivation per entry, hash = the lock's integrity, fetched by name@version
      for (const key of expected.filter((k) => k !== "node_modules/cline")) {
        const f = runner.fetched[key];
        expect(f, key).toBeDefined();
        expect(f!.fn).toBe("stdenvNoCC.mkDerivation");
        expect(f!.outputHash).toBe(entries[key]!["integrity"]);
        expect(f!.outputHashMode).toBe("flat");
        expect(f!.spec).toBe(`${key.split("node_modules/").at(-1)}@${entries[key]!["version"]}`);
        expect(f!.impure).toContain("npm_config_registry");
      }
      expect(runner.installScript).toMatch(
        /^link_dir 'node_modules\/cline' \/nix\/store\/\S+-cline-core-1\.0\.10\/lib\/cline$/m,
      );
      expect(runner.installScript).not.toMatch(/https?:/);
      check(
        "one FOD per lock entry (outputHash = integrity, npm pack by name); node_modules/cline = the vendored core",
      );

      expect(runner.installPhase).toContain("/packages/runner/bin/flakegym.js");
      expect(runner.installPhase).toMatch(
        /ln -sfn '\.\.\/\.\.\/packages\/runner' \S+\/node_modules\/@flakegym\/runner/,
      );
    });

    it("has apps.rollout running `flakegym rollout` from the runner package", async () => {
      for (const sys of LINUX) {
        const apps = await flake.evalJson<Record<string, { type: string; program: string }>>(`apps.${sys}`);
        const pkgs = await flake.evalJson<{ runner: string; rollout: string; text: string }>(
          `packages.${sys}`,
          `ps: { runner = "\${ps.flakegym}"; rollout = "\${ps.flakegym-rollout}"; text = ps.flakegym-rollout.stub.args.text; }`,
        );
        expect(apps["rollout"]).toMatchObject({
          type: "app",
          program: `${pkgs.rollout}/bin/flakegym-rollout`,
        });
        expect(apps["default"]).toMatchObject({ type: "app", program: `${pkgs.runner}/bin/flakegym` });
        // the app marks itself (rollout's default backend choice) and names its own flake
        const [marker, outputsLine, closureLine, flakeLine, exec, ...rest] = pkgs.text.trim().split("\n");
        expect([marker, exec, rest]).toEqual([
          "export FLAKEGYM_NIX_APP=1",
          `exec ${pkgs.runner}/bin/flakegym rollout "$@"`,
          [],
        ]);
        // every profile's toolchain and the catalog tasks' snapshots as store paths the app does not
        // build (nix/store-outputs.nix); the stub is not the stand-in
        const outputsJson = /^export FLAKEGYM_NIX_OUTPUTS='(.*)'$/.exec(outputsLine ?? "")?.[1];
        expect(outputsJson, outputsLine).toBeDefined();
        const outputs = storeOutputsOf({ FLAKEGYM_NIX_OUTPUTS: outputsJson });
        expect(outputs?.nixpkgs).toBe("nixpkgs");
        expect(Object.keys(outputs?.profiles ?? {}).sort()).toEqual(Object.keys(profiles).sort());
        expect(outputs?.snapshots["semver-lite-caret-zero"]?.out).toMatch(
          /^\/nix\/store\/[0-9a-z]{32}-flakegym-snapshot-semver-lite-caret-zero-workspace$/,
        );
        // what the sandboxes bind of the store: the runner's runtime closure (nix/runtime-closure.nix)
        expect(closureLine).toMatch(
          /^export FLAKEGYM_STORE_CLOSURE=\/nix\/store\/[0-9a-z]{32}-flakegym-runner-closure$/,
        );
        // the flake's own source in the store: this checkout's flake.nix
        const self = /^export FLAKEGYM_FLAKE="\$\{FLAKEGYM_FLAKE:-path:(\/\S+)\}"$/.exec(
          flakeLine ?? "",
        )?.[1];
        expect(self, flakeLine).toBeDefined();
        expect(readFileSync(join(flake.realPath(self!), "flake.nix"), "utf8")).toBe(
          readFileSync(join(flake.dir, "flake.nix"), "utf8"),
        );
      }
      check(
        'apps.<linux>.rollout sets FLAKEGYM_NIX_APP=1, FLAKEGYM_NIX_OUTPUTS, FLAKEGYM_FLAKE and FLAKEGYM_STORE_CLOSURE, then execs <runner>/bin/flakegym rollout "$@"',
      );
    });

    it("has the checks: unit tests, a smoke test per profile, image metadata, the shared Cline layer", async () => {
      const checks = await flake.evalJson<Record<string, string[]>>(
        "checks",
        "cs: builtins.mapAttrs (s: c: builtins.attrNames c) cs",
      );
      expect(Object.keys(checks).sort()).toEqual([...LINUX].sort());
      const expected = [
        ...nixNames.map((n) => `smoke-${n}`),
        ...nixNames.map((n) => `image-${n}`),
        "image-snapshot-ratatui-2148",
        ...(await localCatalogTaskIds()).map((id) => `image-snapshot-${id}`),
        "cline-layer-shared",
        "runner-unit-tests",
        "runner",
      ].sort();
      for (const sys of LINUX) expect(checks[sys]!.sort()).toEqual(expected);

      const smoke = await flake.evalJson<{ script: string; unit: { projects: string[]; src: string } }>(
        "checks.x86_64-linux",
        `c: { script = c.smoke-python-env.stub.args.buildCommand; unit = { inherit (c.runner-unit-tests) projects; src = "\${c.runner-unit-tests.src}"; }; }`,
      );
      for (const cmd of profiles.python.smoke) expect(smoke.script).toContain(cmd);
      expect(smoke.script).toContain("poetry --version");
      expect(smoke.unit.projects).toEqual(["runner", "profiles"]);
      const testFiles = listFiles(flake.realPath(smoke.unit.src));
      expect(testFiles).toEqual(
        expect.arrayContaining(["vitest.config.ts", "packages/runner/test/nix/flake-facts.test.ts"]),
      );
      expect(testFiles.filter((f) => f.split("/").includes("node_modules"))).toEqual([]);
      check(
        `checks.<linux>: ${expected.length} checks (smoke per profile runs its profiles.json smoke commands)`,
      );

      const formatter = await flake.evalJson<Record<string, string>>(
        "formatter",
        "f: builtins.mapAttrs (s: d: d.name) f",
      );
      expect(Object.values(formatter)).toEqual(ALL_SYSTEMS.map(() => "nixfmt"));
      check("formatter.<system> = nixfmt");
    });

    it(`passes \`nix flake check --no-build${nixImpl.allSystems ? " --all-systems" : ""}\` (output schema)`, async () => {
      const all = nixImpl.allSystems ? ["--all-systems"] : [];
      const r = await flake.nix(
        ["flake", "check", "--no-build", ...all, ...flake.overrideArgs, flake.ref],
        300_000,
      );
      expect(r.stderr).not.toMatch(/^error:/m);
      expect(r.exitCode).toBe(0);
      check(`nix flake check --no-build ${all.join(" ")}`);
    });

    it("lists every output with `nix flake show --json`", async () => {
      const all = nixImpl.allSystems ? ["--all-systems"] : [];
      const r = await flake.nix(
        ["flake", "show", "--json", ...all, ...flake.overrideArgs, flake.ref],
        300_000,
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const shown = JSON.parse(r.stdout) as Record<string, Record<string, Record<string, unknown>>>;
      expect(Object.keys(shown).sort()).toEqual(
        ["apps", "checks", "devShells", "formatter", "lib", "packages"].sort(),
      );
      for (const sys of LINUX) {
        expect(Object.keys(shown.packages![sys]!)).toEqual(
          expect.arrayContaining([
            ...nixNames.map((n) => `${n}-container`),
            "snapshot-ratatui-2148",
            "flakegym",
          ]),
        );
        expect(Object.keys(shown.apps![sys]!).sort()).toEqual(["default", "rollout"]);
      }
      check(`nix flake show ${all.join(" ")}: every output listed`);
    });
  });
}
