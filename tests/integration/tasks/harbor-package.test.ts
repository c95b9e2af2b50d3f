import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listCatalog, loadTask } from "../../../packages/runner/src/tasks/catalog.js";
import { exportHarborDir } from "../../../packages/runner/src/tasks/harbor-dir.js";

/**
 * Our Harbor exports, read by the `harbor` package's own task models (PyPI `harbor`, never
 * committed): FLAKEGYM_HARBOR_SRC = an unpacked harbor wheel (the directory holding `harbor/`),
 * FLAKEGYM_HARBOR_PYTHON = a python3 with pydantic, toml, pathspec and pyyaml. Only
 * `harbor.models`, `harbor.utils` and `harbor.constants` are loaded (the package's __init__ pulls in
 * its whole CLI); on Python 3.11 the 3.12-only `typing.override` is stubbed.
 */
const SRC = process.env.FLAKEGYM_HARBOR_SRC;
const PYTHON = process.env.FLAKEGYM_HARBOR_PYTHON ?? "python3";

const LOAD = `
import json, sys, typing, pathlib
if not hasattr(typing, "override"):
    typing.override = lambda f: f
from harbor.models.task.task import Task
out = {}
for d in sys.argv[1:]:
    try:
        t = Task(pathlib.Path(d))
        out[pathlib.Path(d).name] = {"ok": True, "steps": [s.name for s in (t.config.steps or [])], "instruction": len(t.instruction or "")}
    except Exception as e:
        out[pathlib.Path(d).name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
`;

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-harbor-package-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe.skipIf(!SRC)("harbor package (FLAKEGYM_HARBOR_SRC)", () => {
  it("loads every catalog task we export, and reads our multi-step fixture as Harbor's multi-step layout", async () => {
    const shim = join(tmp, "shim", "harbor");
    await mkdir(shim, { recursive: true });
    await writeFile(join(shim, "__init__.py"), "");
    for (const part of ["models", "utils", "constants.py"]) {
      await cp(join(SRC!, "harbor", part), join(shim, part), { recursive: true });
    }
    const out = join(tmp, "export");
    const ids = (await listCatalog()).map((e) => e.id);
    const dirs: string[] = [];
    for (const id of ids) dirs.push(await exportHarborDir(await loadTask(id), out));
    const multi = join(REPO_ROOT, "tests/fixtures/harbor/multi-step");
    const r = await execa(PYTHON, ["-c", LOAD, ...dirs, multi], {
      env: { PYTHONPATH: join(tmp, "shim") },
      reject: false,
      timeout: 120_000,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    const loaded = JSON.parse(r.stdout) as Record<string, { ok: boolean; steps?: string[]; error?: string }>;
    for (const id of ids) expect(loaded[id], id).toMatchObject({ ok: true, steps: [] });
    expect(loaded["multi-step"]).toMatchObject({ ok: true, steps: ["write", "fix"] });
  });
});

it.skipIf(SRC)("says why the harbor package test skipped", () => {
  console.info(
    "harbor-package: set FLAKEGYM_HARBOR_SRC to an unpacked harbor wheel (pip download --no-deps --python-version 3.12 --only-binary=:all: harbor) and FLAKEGYM_HARBOR_PYTHON to a python3 with pydantic, toml, pathspec, pyyaml",
  );
});
