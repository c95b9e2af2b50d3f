import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { expectedIn } from "../../../src/scoring/externalize/verdict.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { pytestSkips, runAndJudge } from "./pytest-emit.js";

// The shape of requests' and marshmallow's parametrized tests: the expected side is a parameter
// (`assert f(value) == expected`, `pytest.raises(..., match=msg)`). Its values are in the
// decorator, and pytest's case ids spell them (`test_x[http://a-http://a/]`): both must leave the
// sandbox, so the values become None there and the cases get fresh ids; the host keeps each
// case's value and maps the graded ids to the new ones.

const TESTS = `import pytest

from lib import norm, check


@pytest.mark.parametrize(
    "value, expected",
    (
        ("example.com/path", "http://example.com/path"),
        ("//example.com", "http://example.com"),
        ("https://x.org", "https://x.org"),
    ),
)
def test_norm(value, expected):
    assert norm(value) == expected


@pytest.mark.parametrize("n, msg", [(-1, "negative: -1"), (1000, "too big: 1000")])
def test_check(n, msg):
    with pytest.raises(ValueError, match=msg):
        check(n)


@pytest.mark.parametrize("value", ["a", "b"])
def test_same(value):
    assert norm(value) != value
`;

const RIGHT = `def norm(v):
    if v.startswith("//"):
        return "http:" + v
    return v if "://" in v else "http://" + v


def check(n):
    if n < 0:
        raise ValueError("negative: %d" % n)
    if n > 999:
        raise ValueError("too big: %d" % n)
`;

// reads the expected value from where it used to be: the test's node id, or its file
const ORACLE = `import os, re


def norm(v):
    node = os.environ.get("PYTEST_CURRENT_TEST", "")
    m = re.search(r"\\[[^-\\]]*-(.*)\\] ", node)
    if m:
        return m.group(1)
    return v


def check(n):
    raise ValueError("negative: %d" % n)
`;

const GRADED = [
  "test_norm[example.com/path-http://example.com/path]",
  "test_norm[//example.com-http://example.com]",
  "test_norm[https://x.org-https://x.org]",
  "test_check[-1-negative: -1]",
  "test_check[1000-too big: 1000]",
  "test_same[a]",
].map((t) => `tests/test_lib.py::${t}`);

const { noHostPython, noPytest } = await pytestSkips();

describe("a parametrized expected side", () => {
  it.skipIf(noHostPython)(
    "leaves the file and the case ids; the host keeps a value per fresh case id",
    async () => {
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      const text = r.files[0]!.content.toString();
      // red team: no expected value and no old case id is written in the rewritten file (but
      // "https://x.org", which the third case also passes in as its input)
      for (const gone of ["http://example.com", "negative: -1", "too big: 1000"])
        expect(text).not.toContain(gone);
      const runIds = r.runIds ?? {};
      expect(Object.keys(runIds).sort()).toEqual(GRADED.filter((g) => !g.includes("test_same")).sort());
      for (const g of Object.values(runIds))
        expect(g).toMatch(/^tests\/test_lib\.py::test_(norm|check)\[p[0-9a-f]{10}\]$/);
      const norm = r.sites.find((s) => s.test.endsWith("test_norm"))!;
      expect(norm.pair).toBe(false);
      expect(
        Object.values(norm.byCase ?? {})
          .map((c) => (c as { v: string }).v)
          .sort(),
      ).toEqual(["http://example.com", "http://example.com/path", "https://x.org"]);
      const run = runIds[GRADED[0]!]!;
      expect(expectedIn(norm, run)).toEqual({ t: "str", v: "http://example.com/path" });
      expect(expectedIn(norm, "tests/test_lib.py::test_norm[other]")).toBeNull();
      // a parameter the test also passes to the code (test_same's value) stays a pair
      expect(r.sites.find((s) => s.test.endsWith("test_same"))!.pair).toBe(true);
      expect(r.runIds?.["tests/test_lib.py::test_same[a]"]).toBeUndefined();
    },
  );

  it.skipIf(noHostPython)(
    "is left as a pair where a graded id is not a case id the host computes",
    async () => {
      const r = await externalizePython(
        [{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }],
        ["tests/test_lib.py::test_norm[example.com/path-http://example.com/pat]"],
      );
      expect(r.runIds).toBeUndefined();
      expect(r.sites.find((s) => s.test.endsWith("test_norm"))!.pair).toBe(true);
    },
  );

  it.skipIf(noPytest)(
    "run by pytest: the reference holds outside the sandbox; an oracle reading the node id fails",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-param-");
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      const ids = GRADED.map((g) => r.runIds?.[g] ?? g);
      const run = runAndJudge(tmp.path, r, ids);
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      // as written, the oracle wins every test_norm case (and test_check[-1], which it solves)
      const asWritten = await run(ORACLE, "oracle-as-written", Buffer.from(TESTS));
      expect(asWritten.p.stdout).toMatch(/3 failed, 4 passed/);
      const oracle = await run(ORACLE, "oracle");
      // it still solves test_check[-1] and the identity case test_norm[https://x.org-https://x.org]
      expect([...oracle.verdict.keys()].sort()).toEqual(
        ids.filter((i) => i !== ids[2] && i !== ids[3]).sort(),
      );
    },
    60_000,
  );
});
