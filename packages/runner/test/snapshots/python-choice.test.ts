import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  choosePython,
  compareVersions,
  fullVersionOf,
  minorOf,
  type PythonCandidate,
  parseUserPythons,
  pythonKeyOf,
} from "../../src/snapshots/python-choice.js";
import { discoverPythons, resolvePython } from "../../src/snapshots/python-providers.js";
import { interpreterBindsOf, pythonShapeOf } from "../../src/snapshots/python-shape.js";

describe("version parsing", () => {
  it("reads major.minor and full versions from what interpreters and specs say", () => {
    expect(minorOf("3.9")).toBe("3.9");
    expect(minorOf("3.10.13")).toBe("3.10");
    expect(minorOf("Python 3.6.15")).toBe("3.6");
    expect(minorOf("python3.11")).toBe("3.11");
    expect(minorOf("latest")).toBeUndefined();
    expect(fullVersionOf("Python 3.9.2+")).toBe("3.9.2");
    expect(compareVersions("3.9.18", "3.9.2")).toBeGreaterThan(0);
    expect(compareVersions("3.10.0", "3.9.18")).toBeGreaterThan(0);
  });

  it("parses user-named interpreters and names a bad entry", () => {
    expect(parseUserPythons("3.9=/opt/a/bin/python3.9, 3.10=/opt/b/bin/python3.10")).toEqual({
      ok: true,
      pythons: [
        { minor: "3.9", path: "/opt/a/bin/python3.9" },
        { minor: "3.10", path: "/opt/b/bin/python3.10" },
      ],
    });
    const bad = parseUserPythons("3.9=relative/python");
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.reason).toContain("'3.9=relative/python' is not VERSION=/absolute/path");
  });
});

const c = (provider: PythonCandidate["provider"], version: string, bind?: string): PythonCandidate => ({
  provider,
  interpreter: `/x/${provider}/${version}/bin/python${minorOf(version)}`,
  version,
  ...(bind ? { bind } : {}),
});

describe("choosePython", () => {
  it("takes the first provider in chain order with the wanted minor, its newest patch", () => {
    const found = [
      c("path", "3.9.2"),
      c("pyenv", "3.9.18"),
      c("uv", "3.9.7"),
      c("uv", "3.9.20"),
      c("pyenv", "3.10.13"),
    ];
    const r = choosePython("row-1", "3.9", found, false);
    expect(r).toMatchObject({
      kind: "match",
      wanted: "3.9",
      candidate: { provider: "uv", version: "3.9.20" },
    });
    expect(choosePython("row-1", "3.9", [...found, c("user", "3.9.1")], false)).toMatchObject({
      candidate: { provider: "user" },
    });
    expect(choosePython("row-1", "3.9", [c("path", "3.9.2")], false)).toMatchObject({
      candidate: { provider: "path", version: "3.9.2" },
    });
  });

  it("refuses a missing version by name: row, wanted, found, and how to provide it", () => {
    const r = choosePython("psf__requests-6028", "3.7", [c("path", "3.11.2")], false);
    expect(r.kind).toBe("refused");
    if (r.kind !== "refused") return;
    expect(r.reason).toBe(
      "task 'psf__requests-6028' wants Python 3.7, and no CPython 3.7 was found (looked in: user, nix, uv, pyenv, path; found: 3.11.2 (path))",
    );
    expect(r.hint).toContain("--python 3.7=/path/to/python3.7");
    expect(r.hint).toContain("uv python install 3.7");
    expect(r.hint).toContain("--allow-python-mismatch");
  });

  it("runs on the sandbox's python3 only when the user allowed it, and says so", () => {
    const r = choosePython("row-2", "3.7", [], true);
    expect(r).toMatchObject({ kind: "mismatch-allowed", wanted: "3.7" });
    expect(r.kind === "mismatch-allowed" && r.note).toContain("--allow-python-mismatch");
    expect(pythonKeyOf(r)).toBe("mismatch-allowed 3.7");
    expect(pythonShapeOf(r)).toEqual({});
  });

  it("a match binds the interpreter's prefix read-only and names it to the venv command", () => {
    const m = choosePython("row-3", "3.9", [c("pyenv", "3.9.18", "/x/pyenv/3.9.18")], false);
    expect(pythonShapeOf(m)).toEqual({
      binds: [{ src: "/x/pyenv/3.9.18", dest: "/x/pyenv/3.9.18" }],
      env: { FLAKEGYM_PYTHON_INTERPRETER: "/x/pyenv/3.9.18/bin/python3.9" },
    });
    expect(pythonKeyOf(m)).toBe("3.9.18 /x/pyenv/3.9.18/bin/python3.9");
    // an interpreter under /usr needs no bind (every sandbox has /usr)
    expect(pythonShapeOf(choosePython("r", "3.11", [c("path", "3.11.2")], false)).binds).toBeUndefined();
    expect(interpreterBindsOf({ python: { used: "3.9.18", matches: true, bind: "/x/p" } })).toEqual(["/x/p"]);
    expect(interpreterBindsOf(undefined)).toEqual([]);
  });
});

describe("discoverPythons (fixture interpreters: tiny scripts that answer like CPython)", () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), "flakegym-pythons-"));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  /** An executable at `prefix/bin/pythonX.Y` printing its version and prefix, as the probe asks. */
  async function fakePython(prefix: string, version: string): Promise<string> {
    const bin = join(prefix, "bin", `python${minorOf(version)}`);
    await mkdir(join(prefix, "bin"), { recursive: true });
    await writeFile(bin, `#!/bin/sh\necho ${version}\necho ${prefix}\n`);
    await chmod(bin, 0o755);
    return bin;
  }

  it("finds pyenv (PYENV_ROOT) and uv interpreters of the wanted minor, and a named one first", async () => {
    const pyenv = join(tmp, "pyenv");
    const uv = join(tmp, "uv");
    await fakePython(join(pyenv, "versions", "3.8.18"), "3.8.18");
    await fakePython(join(pyenv, "versions", "3.8.10"), "3.8.10");
    await fakePython(join(pyenv, "versions", "3.9.18"), "3.9.18");
    await fakePython(join(uv, "cpython-3.8.20-linux-x86_64-gnu"), "3.8.20");
    const named = await fakePython(join(tmp, "mine"), "3.8.1");
    const env = {
      HOME: join(tmp, "home"),
      PATH: "/nonexistent",
      PYENV_ROOT: pyenv,
      UV_PYTHON_INSTALL_DIR: uv,
    };
    const found = await discoverPythons("3.8", {}, env);
    expect(found.map((f) => `${f.provider} ${f.version}`)).toEqual([
      "uv 3.8.20",
      "pyenv 3.8.10",
      "pyenv 3.8.18",
    ]);
    expect(found[2]).toMatchObject({ bind: join(pyenv, "versions", "3.8.18") });
    const chosen = await resolvePython("row-4", "3.8", {}, { ...env, FLAKEGYM_PYTHON: `3.8=${named}` });
    expect(chosen).toMatchObject({ kind: "match", candidate: { provider: "user", interpreter: named } });
    const refused = await resolvePython("row-5", "3.7", {}, env);
    expect(refused.kind).toBe("refused");
    await expect(resolvePython("row-6", "3.8", { named: ["3.8=nope"] }, env)).rejects.toMatchObject({
      code: "E_USAGE",
    });
  });
});
