import { cp, mkdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSnapshot } from "../../packages/runner/src/snapshots/build.js";
import type { SnapshotSpec } from "../../packages/runner/src/snapshots/spec.js";
import { commitTree } from "../../packages/runner/src/tasks/materialize.js";
import { sandboxSkipReason } from "../../packages/runner/test/helpers/sandbox.js";
import { registryUnreachable } from "./registries.js";

/**
 * The profiles' default environment install against the real registries: a small repository per
 * profile declares one real dependency (no install list of its own); the snapshot build installs it
 * with network, and the smoke commands — run offline, as every agent and scoring sandbox is — must
 * find it. Python also checks the recorded resolved set pins a rebuild. Each profile skips, saying
 * why, where its registry or toolchain is not reachable from here.
 */

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-env-install-");
});
afterAll(async () => {
  await tmp?.cleanup();
});

const noSandbox = sandboxSkipReason();
if (noSandbox) console.warn(`env-install e2e skipped: ${noSandbox}`);

/** A spec over the files of `dir` (committed as a fresh repository), with the profile's default install. */
async function specOf(dir: string, profile: SnapshotSpec["profile"], smoke: string[]): Promise<SnapshotSpec> {
  const materialize = async (dest: string) => {
    await cp(dir, dest, { recursive: true, filter: (src) => !src.endsWith("/.git") });
    return { commit: await commitTree(dest) };
  };
  const { commit } = await materialize(`${dir}-at-commit`);
  return {
    taskId: `env-${profile}`,
    repo: `test:${dir}`,
    commit,
    profile,
    install: [],
    smoke,
    network: "none",
    envDefaults: "auto",
    limits: { memoryMb: 4096, pids: 512, cpuSeconds: 1800, diskMb: 4096 },
    materialize,
  };
}

async function repo(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(tmp.path, "repos", name);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

const cacheDir = () => join(tmp.path, "cache");

describe.skipIf(noSandbox)("default environment install, real registries", () => {
  it("python: a venv with the declared deps from PyPI, usable offline, the resolved set pinning a rebuild", async (ctx) => {
    const why = await registryUnreachable("PyPI", [
      "/usr/bin/python3",
      "-m",
      "pip",
      "download",
      "--no-deps",
      "--no-cache-dir",
      "-q",
      "-d",
      join(tmp.path, "probe-pip"),
      "six==1.17.0",
    ]);
    if (why) return ctx.skip(why);
    const dir = await repo("py", {
      "pyproject.toml":
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n' +
        '[project]\nname = "envdemo"\nversion = "0.1.0"\ndependencies = ["six==1.17.0"]\n\n' +
        '[tool.setuptools]\npackages = ["envdemo"]\n',
      "envdemo/__init__.py": "import six\n\nVALUE = six.text_type('ok')\n",
      "tests/test_demo.py": "from envdemo import VALUE\n\n\ndef test_value():\n    assert VALUE == 'ok'\n",
    });
    const spec = await specOf(dir, "python", [
      'test "$VIRTUAL_ENV" = /deps/venv && command -v python | grep -qx /deps/venv/bin/python',
      "python -c 'import envdemo, six; assert six.__version__ == \"1.17.0\"'",
      "python -m pytest -q tests",
      // offline now: pip cannot fetch anything
      "! python -m pip download --no-deps -q -d /tmp/x six",
    ]);
    // a task that asks for another Python (SWE-bench's facts name 3.9 for most rows) gets it recorded
    const snap = await buildSnapshot({ ...spec, pythonWanted: "3.9" }, { cacheDir: cacheDir() });
    const env = snap.manifest.envInstall!;
    expect(env).toMatchObject({
      source: "profile",
      network: "host",
      pinned: false,
      lockFile: "env-lock.txt",
      python: { wanted: "3.9", used: expect.stringMatching(/^3\.\d+\.\d+$/), matches: false },
    });
    expect(env.python?.note).toContain(`runs Python ${env.python?.used}`);
    expect(snap.manifest.network).toBe("required");
    expect(env.resolved).toContain("six==1.17.0");
    expect(env.resolved!.some((l) => l.startsWith("pytest=="))).toBe(true);
    expect(env.lockSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(snap.manifest.steps.filter((s) => s.name === "smoke").map((s) => s.exitCode)).toEqual([
      0, 0, 0, 0,
    ]);

    // the snapshot is evicted: the rebuild installs under the recorded resolved set
    await rm(snap.dir, { recursive: true, force: true });
    const again = await buildSnapshot(spec, { cacheDir: cacheDir() });
    expect(again.cached).toBe(false);
    expect(again.key).toBe(snap.key);
    expect(again.manifest.envInstall).toMatchObject({ pinned: true, resolved: env.resolved });
    expect(again.manifest.install[1]).toContain("-c /deps/env-pins.txt");
  });

  it("rust: cargo fetch --locked into the snapshot's CARGO_HOME; an offline build finds the crate", async (ctx) => {
    const home = join(tmp.path, "probe-cargo");
    const dir = await repo("rs", {
      "Cargo.toml":
        '[package]\nname = "envdemo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nitoa = "=1.0.15"\n',
      "src/lib.rs":
        "pub fn show(n: u32) -> String { itoa::Buffer::new().format(n).to_owned() }\n\n" +
        '#[cfg(test)]\nmod tests { #[test] fn shows() { assert_eq!(super::show(42), "42"); } }\n',
    });
    // the lock a user's repository would carry, made with the registry client itself
    const why = await registryUnreachable(
      "the crates registry",
      ["cargo", "generate-lockfile", "--manifest-path", join(dir, "Cargo.toml")],
      { CARGO_HOME: home },
    );
    if (why) return ctx.skip(why);
    const spec = await specOf(dir, "rust", ["cargo test --offline --quiet"]);
    const snap = await buildSnapshot(spec, { cacheDir: cacheDir() });
    expect(snap.manifest.envInstall).toMatchObject({
      source: "profile",
      commands: ["cargo fetch --locked"],
      lockFile: "Cargo.lock",
      lockSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect((await stat(join(snap.tree, "deps", "cargo", "registry", "cache"))).isDirectory()).toBe(true);
  });

  it("go: go mod download into the snapshot's GOMODCACHE; an offline build finds the module", async (ctx) => {
    const dir = await repo("go", {
      "go.mod": "module example.com/envdemo\n\ngo 1.21\n\nrequire github.com/google/go-cmp v0.6.0\n",
      "demo.go":
        'package envdemo\n\nimport "github.com/google/go-cmp/cmp"\n\nfunc Same(a, b []int) bool { return cmp.Equal(a, b) }\n',
      "demo_test.go":
        'package envdemo\n\nimport "testing"\n\nfunc TestSame(t *testing.T) {\n\tif !Same([]int{1}, []int{1}) {\n\t\tt.Fatal("want equal")\n\t}\n}\n',
    });
    const gopath = join(tmp.path, "probe-go");
    const why = await registryUnreachable("the Go module proxy", ["sh", "-c", `cd ${dir} && go mod tidy`], {
      GOPATH: gopath,
      GOMODCACHE: join(gopath, "mod"),
      GOFLAGS: "-mod=mod",
      GOTOOLCHAIN: "local",
    });
    if (why) return ctx.skip(why);
    await execa("chmod", ["-R", "u+w", gopath]);
    const spec = await specOf(dir, "go", ["go test ./..."]);
    const snap = await buildSnapshot(spec, { cacheDir: cacheDir() });
    expect(snap.manifest.envInstall).toMatchObject({
      source: "profile",
      commands: ["GOFLAGS=-mod=mod go mod download"],
      lockFile: "go.sum",
      lockSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it("node: npm ci from package-lock.json; an offline require finds the package", async (ctx) => {
    const dir = await repo("node", {
      "package.json": JSON.stringify({
        name: "envdemo",
        version: "1.0.0",
        dependencies: { "is-number": "7.0.0" },
      }),
    });
    const why = await registryUnreachable("the npm registry", [
      "npm",
      "install",
      "--package-lock-only",
      "--no-audit",
      "--no-fund",
      "--prefix",
      dir,
    ]);
    if (why) return ctx.skip(why);
    const spec = await specOf(dir, "node", ["node -e \"if (!require('is-number')(5)) process.exit(1)\""]);
    const snap = await buildSnapshot(spec, { cacheDir: cacheDir() });
    expect(snap.manifest.envInstall).toMatchObject({
      source: "profile",
      commands: ["npm ci --no-audit --no-fund"],
      lockFile: "package-lock.json",
    });
  });

  it("c: nothing is installed, and the manifest says so", async () => {
    const dir = await repo("c", { Makefile: "all:\n\ttrue\n" });
    const snap = await buildSnapshot(await specOf(dir, "c", ["make"]), { cacheDir: cacheDir() });
    expect(snap.manifest.envInstall).toMatchObject({ source: "none", commands: [], network: "none" });
    expect(snap.manifest.network).toBe("none");
  });
});
