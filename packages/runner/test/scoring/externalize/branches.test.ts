import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { skipWithoutHostPython } from "../../helpers/host-python.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Shapes a real row's tests have (marshmallow's test_schema.py): an assertion on one side of an if
// on a parameter (the case taking the other side emits nothing, which must not read as a
// suppressed emission), and a containment in a dict's keys view. The reference implementation
// must pass outside the sandbox too; a wrong one must still fail where the assertion is checked.

const TESTS = `import pytest

from lib import build, keys_of


@pytest.mark.parametrize("attribute", ("f1", None))
def test_collision(attribute):
    if attribute is None:
        build(attribute)
    else:
        with pytest.raises(ValueError, match=attribute):
            build(attribute)


def test_keys_view():
    assert "upper" not in keys_of()
    assert "name" in keys_of()
`;

const RIGHT = `def build(attribute):
    if attribute is not None:
        raise ValueError("duplicate " + attribute)


def keys_of():
    return {"name": 1}.keys()
`;

const WRONG = `def build(attribute):
    return None


def keys_of():
    return {"name": 1, "upper": 2}.keys()
`;

const GRADED = ["test_collision[f1]", "test_collision[None]", "test_keys_view"].map(
  (t) => `tests/test_lib.py::${t}`,
);

const noHostPython = skipWithoutHostPython("the host rewriter's runs");
const hasPytest =
  !noHostPython && (await execa("python3", ["-c", "import pytest"], { reject: false })).exitCode === 0;
if (!noHostPython && !hasPytest)
  console.log(
    "skipped the rewritten file's pytest run: the host's python3 has no pytest (sh scripts/ensure-system-deps installs it)",
  );

describe("externalized assertions on one side of a branch, and dict views", () => {
  it.skipIf(noHostPython)(
    "keeps an assertion on one side of an if as written; a keys view is a site",
    async () => {
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      expect(r.tests["tests/test_lib.py::test_collision"]?.kept).toEqual([
        "it runs on one side of an if, match or except only (kept as written)",
      ]);
      expect(r.sites.map((s) => `${s.test.split("::").at(-1)}:${s.kind}:${s.count}`).sort()).toEqual([
        "test_keys_view:in:one",
        "test_keys_view:notin:one",
      ]);
    },
  );

  it.skipIf(noHostPython || !hasPytest)(
    "run by pytest (needs pytest on the host's python3): the reference passes every case outside the sandbox, a wrong one fails",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-branches-");
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      const run = async (impl: string, name: string) => {
        const dir = join(tmp.path, name);
        await mkdir(join(dir, "tests"), { recursive: true });
        await writeFile(join(dir, "lib.py"), impl);
        await writeFile(join(dir, "tests/test_lib.py"), r.files[0]!.content);
        const emit = join(dir, "emit");
        const p = await execa("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
          cwd: dir,
          env: { FLAKEGYM_EMIT: emit, PYTHONPATH: dir },
          reject: false,
        });
        const text = await readFile(emit, "utf8").catch(() => undefined);
        return { p, verdict: externalVerdict(GRADED, r.sites, text) };
      };
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      const wrong = await run(WRONG, "wrong");
      // the kept raises fails in the sandbox as written; the keys view's containment outside it
      expect(wrong.p.stdout).toMatch(/test_collision\[f1\]/);
      expect([...wrong.verdict.keys()]).toEqual(["tests/test_lib.py::test_keys_view"]);
    },
    60_000,
  );
});
