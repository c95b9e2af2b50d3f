import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readHead, workspaceDiff } from "@flakegym/cline-vendor";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { buildSnapshot, forkSnapshot } from "../../src/snapshots/build.js";
import { baseCommitOf } from "../../src/snapshots/manifest.js";
import { discoverPythons } from "../../src/snapshots/python-providers.js";
import type { SnapshotSpec } from "../../src/snapshots/spec.js";
import { commitTree } from "../../src/tasks/materialize.js";
import { skipWithoutSandbox } from "../helpers/sandbox.js";

const noSandbox = skipWithoutSandbox("buildSnapshot (real sandbox)");

async function makeSpec(install: string[], smoke: string[]): Promise<SnapshotSpec & { calls: number }> {
  const src = await mkdtemp(join(tmpdir(), "fg-src-"));
  await writeFile(join(src, "hello.txt"), "hello\n");
  const commit = await commitTree(src);
  const spec = {
    calls: 0,
    taskId: "synthetic",
    repo: `test:${src}`,
    commit,
    profile: "dev-base" as const,
    install,
    smoke,
    network: "none" as const,
    limits: { memoryMb: 512, pids: 128, cpuSeconds: 60, diskMb: 256 },
    async materialize(dest: string) {
      spec.calls++;
      await mkdir(dest, { recursive: true });
      await writeFile(join(dest, "hello.txt"), "hello\n");
      return { commit: await commitTree(dest) };
    },
  };
  return spec;
}

describe.skipIf(noSandbox)("buildSnapshot (real sandbox)", () => {
  it("builds once for concurrent requests, keeps the smoke log, then serves the cache", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    const spec = await makeSpec(["echo built > built.txt"], ["cat built.txt", "git log --oneline | wc -l"]);
    const [a, b, c] = await Promise.all([
      buildSnapshot(spec, { cacheDir }),
      buildSnapshot(spec, { cacheDir }),
      buildSnapshot(spec, { cacheDir }),
    ]);
    expect(spec.calls).toBe(1);
    expect(a.key).toBe(b.key);
    expect(c.dir).toBe(join(cacheDir, a.key));
    expect(await readFile(join(a.workspace, "built.txt"), "utf8")).toBe("built\n");
    expect(await readFile(a.smokeLog, "utf8")).toContain("$ cat built.txt\nbuilt");
    expect(a.manifest.steps.map((s) => [s.name, s.exitCode])).toEqual([
      ["source", 0],
      ["install", 0],
      ["smoke", 0],
      ["smoke", 0],
    ]);
    expect(a.manifest.toolchain[0]).toMatch(/^git --version: git version/);
    const again = await buildSnapshot(spec, { cacheDir });
    expect(again.cached).toBe(true);
    expect(spec.calls).toBe(1);
  });

  it("the install's edits to tracked files (and the files it adds) are the agent's base, never its diff", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    // SWE-bench's pre_install steps pin files with `sed -i`; installs leave files behind
    const spec = await makeSpec(["sed -i s/hello/pinned/ hello.txt", "echo made > generated.txt"], []);
    const snap = await buildSnapshot(spec, { cacheDir });
    const base = baseCommitOf(snap.manifest);
    expect(base).not.toBe(snap.manifest.commit);
    expect(snap.manifest.baseChanges).toEqual(["generated.txt", "hello.txt"]);
    const objects = join(snap.workspace, ".git", "objects");
    // the snapshot as built has no changes against its base, and its own HEAD names it
    const clean = await workspaceDiff({ workspace: snap.workspace, baseCommit: base, baseObjects: objects });
    expect(clean.patch.toString()).toBe("");
    expect(readHead(snap.workspace)).toBe(base);
    const status = await execa("git", ["-C", snap.workspace, "status", "--porcelain"]);
    expect(status.stdout).toBe("");
    // an agent's change in a fork: its diff holds that change only
    const fork = await forkSnapshot(snap, { dest: join(cacheDir, "fork") });
    try {
      await writeFile(join(fork.workspace, "agent.txt"), "agent\n");
      const diff = (
        await workspaceDiff({ workspace: fork.workspace, baseCommit: base, baseObjects: objects })
      ).patch.toString();
      expect(diff).toContain("agent.txt");
      expect(diff).not.toContain("hello.txt");
      expect(diff).not.toContain("generated.txt");
    } finally {
      await fork.release();
    }
    // the base commit is a child of the source commit, made with a fixed identity: rebuilt, same id
    const parent = await execa("git", ["-C", snap.workspace, "rev-parse", `${base}^`]);
    expect(parent.stdout).toBe(snap.manifest.commit);
    const again = await buildSnapshot(spec, { cacheDir: await mkdtemp(join(tmpdir(), "fg-cache-")) });
    expect(baseCommitOf(again.manifest)).toBe(base);
  });

  it("an install that changes no file keeps the source commit as the base", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    const snap = await buildSnapshot(await makeSpec(["true"], []), { cacheDir });
    expect(baseCommitOf(snap.manifest)).toBe(snap.manifest.commit);
    expect(snap.manifest.baseChanges).toEqual([]);
  });

  it("a failing step is recorded with its log, named in the error, and never cached", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    const spec = await makeSpec(["echo some output; echo the error >&2; exit 3"], []);
    const err = (await buildSnapshot(spec, { cacheDir }).then(
      () => undefined,
      (e: unknown) => e,
    )) as Error & { code: string; hint: string };
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe("E_SNAPSHOT_BUILD");
    expect(err.message).toContain("failed in step 'install: echo some output; echo the error >&2; exit 3'");
    expect(err.message).toContain("the error");
    const [key] = (await import("node:fs")).readdirSync(join(cacheDir, "failed"));
    expect(await readFile(join(cacheDir, "failed", key!, "build.log"), "utf8")).toContain("some output");
    expect(existsSync(join(cacheDir, key!))).toBe(false);
    expect(
      (await import("node:fs")).readdirSync(join(cacheDir, "tmp")).filter((n) => !n.startsWith("identity")),
    ).toEqual([]);
    await expect(buildSnapshot(spec, { cacheDir })).rejects.toThrow(/failed in step/);
    expect(spec.calls).toBe(2); // tried again: failures are not cached
  });

  it("only the install step has network: smoke runs offline, package managers told so; the manifest says which install ran", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    // a network interface besides lo exists only where the sandbox shares the host's network
    const ifaces = "tail -n +3 /proc/net/dev | grep -cv ' lo:'";
    const spec = {
      ...(await makeSpec(
        [`${ifaces} > ifaces.txt`],
        [`test "$(${ifaces})" = 0`, 'test "$GOPROXY" = off -a "$PIP_NO_INDEX" = 1'],
      )),
      network: "required" as const,
    };
    const snap = await buildSnapshot(spec, { cacheDir });
    expect(Number(await readFile(join(snap.workspace, "ifaces.txt"), "utf8"))).toBeGreaterThan(0);
    expect(snap.manifest.envInstall).toMatchObject({
      source: "task",
      network: "host",
      reason: "the task's own install list",
    });
    expect(snap.manifest.steps.map((s) => [s.name, s.exitCode])).toEqual([
      ["source", 0],
      ["install", 0],
      ["smoke", 0],
      ["smoke", 0],
    ]);
  });

  it("a failing default install names the profile's default and how to replace it", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    const write = async (dir: string) => {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "Cargo.toml"), "[package\nname = \n");
      return { commit: await commitTree(dir) };
    };
    const { commit } = await write(await mkdtemp(join(tmpdir(), "fg-src-")));
    const spec: SnapshotSpec = {
      taskId: "broken-manifest",
      repo: "test:broken-manifest",
      commit,
      profile: "rust",
      install: [],
      smoke: [],
      network: "none",
      envDefaults: "auto",
      limits: { memoryMb: 1024, pids: 256, cpuSeconds: 120, diskMb: 256 },
      materialize: (dest) => write(dest),
    };
    await expect(buildSnapshot(spec, { cacheDir })).rejects.toMatchObject({
      code: "E_SNAPSHOT_BUILD",
      message: expect.stringContaining("failed in step 'install: cargo fetch'"),
      hint: expect.stringContaining("the rust profile's default install failed"),
    });
  });
});

/** A python task's spec over a one-file repository: a venv made with the chosen interpreter, no pip. */
async function pythonSpec(wanted: string): Promise<SnapshotSpec> {
  const spec = await makeSpec(
    [`"\${FLAKEGYM_PYTHON_INTERPRETER:-python3}" -m venv --without-pip "$FLAKEGYM_DEPS/venv"`],
    [`"$FLAKEGYM_DEPS/venv/bin/python" -c 'import sys; print(sys.version)'`],
  );
  return { ...spec, taskId: `wants-${wanted}`, profile: "python", pythonWanted: wanted };
}

const pyenv39 = await discoverPythons("3.9").then((f) => f.find((c) => c.bind !== undefined));

describe.skipIf(noSandbox)("buildSnapshot: the Python a task wants (real sandbox)", () => {
  it.skipIf(pyenv39 === undefined)(
    "makes the venv with a 3.9 outside /usr, bound read-only into the build, and records it",
    async () => {
      const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
      const s = await buildSnapshot(await pythonSpec("3.9"), { cacheDir });
      expect(s.manifest.envInstall?.python).toMatchObject({
        wanted: "3.9",
        matches: true,
        provider: pyenv39!.provider,
        interpreter: pyenv39!.interpreter,
        bind: pyenv39!.bind,
      });
      expect(await readFile(s.smokeLog, "utf8")).toMatch(/^3\.9\.\d+/m);
    },
  );
  it.skipIf(pyenv39 === undefined)(
    "fails a build whose install made its venv with another Python than the chosen one (an old import)",
    async () => {
      const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
      const spec = await pythonSpec("3.9");
      const old = { ...spec, install: ['python3 -m venv --without-pip "$FLAKEGYM_DEPS/venv"'] };
      await expect(buildSnapshot(old, { cacheDir })).rejects.toMatchObject({
        code: "E_PYTHON_MISMATCH",
        message: expect.stringMatching(
          /task 'wants-3\.9' wants Python 3\.9, but its install made the venv with Python (?!3\.9\.)\d/,
        ),
        hint: expect.stringContaining("import the row again"),
      });
    },
  );
  if (pyenv39 === undefined) console.warn("python 3.9 build skipped: no CPython 3.9 outside /usr here");

  it("refuses a version nobody provides by name, and builds on python3 only when allowed", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "fg-cache-"));
    await expect(buildSnapshot(await pythonSpec("2.5"), { cacheDir })).rejects.toMatchObject({
      code: "E_PYTHON_MISSING",
      message: expect.stringContaining("task 'wants-2.5' wants Python 2.5, and no CPython 2.5 was found"),
      hint: expect.stringContaining("--python 2.5=/path/to/python2.5"),
    });
    const s = await buildSnapshot(await pythonSpec("2.5"), { cacheDir, python: { allowMismatch: true } });
    expect(s.manifest.envInstall?.python).toMatchObject({
      wanted: "2.5",
      matches: false,
      provider: "sandbox",
      allowedMismatch: true,
    });
  });
});
