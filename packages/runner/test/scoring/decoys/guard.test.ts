import { describe, expect, it } from "vitest";
import { DECOYS_PER_TEST, freshName, guardFiles, withOwnNameAs } from "../../../src/scoring/decoys/guard.js";
import { decoysPassedAlone, decoyVerdict } from "../../../src/scoring/results.js";

let s = 1;
const rand = (n: number) => {
  s = (s * 1103515245 + 12345) % 2 ** 31;
  return s % n;
};

describe("guardFiles", () => {
  it("renames every graded test, twins it with a decoy differing in one literal, and maps ids", () => {
    const py = `from m import f\n\n\ndef test_a():\n    assert f(1) == "one"\n\n\ndef test_b():\n    assert f(2)\n`;
    const g = guardFiles(
      "pytest",
      [{ path: "tests/test_m.py", content: Buffer.from(py) }],
      ["tests/test_m.py::test_a", "tests/test_m.py::test_b"],
      rand,
    );
    const out = g.files[0]!.content.toString();
    expect(out).not.toContain("def test_a(");
    expect(out).not.toContain("def test_b(");
    const run = g.plan.runIds["tests/test_m.py::test_a"]!;
    const [decoy, of] = Object.entries(g.plan.decoys)[0]!;
    expect(of).toBe("tests/test_m.py::test_a");
    expect(run).toMatch(/^tests\/test_m\.py::test_[0-9a-f]{10}$/);
    expect(decoy).toMatch(/^tests\/test_m\.py::test_[0-9a-f]{10}$/);
    // the twin: same body, one literal changed
    const bodyOf = (id: string) => out.split(`def ${id.split("::")[1]}():\n`)[1]!.split("\n")[0]!;
    expect(bodyOf(run)).toBe('    assert f(1) == "one"');
    expect(bodyOf(decoy)).not.toBe('    assert f(1) == "one"');
    expect(bodyOf(decoy)).toMatch(/^ {4}assert f\(1\) == "[a-z]*"$/);
    // test_b is renamed but has nothing to twin; an id nowhere is reported too
    expect(g.plan.runIds["tests/test_m.py::test_b"]).toMatch(/::test_[0-9a-f]{10}$/);
    expect(g.report.guarded).toEqual(["tests/test_m.py::test_a"]);
    expect(g.report.unguarded.map((u) => u.id)).toEqual(["tests/test_m.py::test_b"]);
  });

  it("a test that names itself says its new name, in the graded copy and in each decoy (pytest's test_pdb_teardown_called)", () => {
    // reduced from pytest 7.2's testing/test_unittest.py: pytester names the file it writes after
    // the running test, so the expected ids start with the test's own name
    const py = [
      "def test_pdb_teardown_called(pytester):",
      "    teardowns = []",
      '    monkeypatch.setattr(pytest, "test_pdb_teardown_called_teardowns", teardowns)',
      "    pytester.makepyfile(SRC)",
      "    pytester.runpytest_inprocess()",
      '    assert teardowns == ["test_pdb_teardown_called.MyTestCase.test_1"]',
      "",
    ].join("\n");
    const id = "testing/test_unittest.py::test_pdb_teardown_called";
    const g = guardFiles(
      "pytest",
      [{ path: "testing/test_unittest.py", content: Buffer.from(py) }],
      [id],
      rand,
    );
    const out = g.files[0]!.content.toString();
    const run = g.plan.runIds[id]!.split("::")[1]!;
    const decoys = Object.keys(g.plan.decoys).map((d) => d.split("::")[1]!);
    expect(decoys.length).toBeGreaterThan(0);
    // the old name is left only inside the longer attribute word
    expect(out.replaceAll("test_pdb_teardown_called_teardowns", "")).not.toContain(
      "test_pdb_teardown_called",
    );
    const block = (name: string) => out.split(`def ${name}(`)[1]!.split("\ndef ")[0]!;
    expect(block(run)).toContain(`["${run}.MyTestCase.test_1"]`);
    for (const d of decoys) {
      expect(block(d)).toContain(`${d}`);
      expect(block(d)).not.toContain(`["${d}.MyTestCase.test_1"]`); // its literal is the one changed
      expect(block(d)).toContain('"test_pdb_teardown_called_teardowns"');
    }
  });

  it("withOwnNameAs replaces whole words only, and never a title string's words", () => {
    expect(withOwnNameAs('f("test_a.x", test_a, test_ab, xtest_a)', "test_a", "test_9")).toBe(
      'f("test_9.x", test_9, test_ab, xtest_a)',
    );
    expect(withOwnNameAs("adds one; adds one", "adds one", "t")).toBe("adds one; adds one");
  });

  it("a containment check of a value the file writes elsewhere carries no decoy (a real marshmallow test a gold solution failed)", () => {
    // marshmallow's test_nested_exclude_inheritance, reduced: its containment checks name keys the
    // test itself builds, one character apart. A decoy "bli" in result passes for a correct
    // solution; a decoy written nowhere else would be the odd one out to code reading the source.
    const py = [
      "def test_keys():",
      "    data = dict(bla=1, bli=2, blubb=dict(foo=42, bar=24, baz=242))",
      "    result = dump(data)",
      '    assert "bla" in result',
      '    assert "bli" in result',
      "",
    ].join("\n");
    const g = guardFiles("pytest", [{ path: "t.py", content: Buffer.from(py) }], ["t.py::test_keys"], rand);
    expect(g.plan.decoys).toEqual({});
    expect(g.report.unguarded.map((u) => u.id)).toEqual(["t.py::test_keys"]);
  });

  it("a containment check of a value written once is twinned, never with a value the file spells", () => {
    const py = [
      "def test_msg():",
      "    result = dict(boam=1, bocm=2, boot=3, bood=4, boon=5, zoom=6, loom=7)",
      '    assert "boom" in explain(result)',
      "",
    ].join("\n");
    // its neighbours one letter away are written: no decoy may expect them
    const written = new Set(["boam", "bocm", "boot", "bood", "boon", "zoom", "loom"]);
    for (let draw = 0; draw < 300; draw++) {
      const g = guardFiles("pytest", [{ path: "t.py", content: Buffer.from(py) }], ["t.py::test_msg"], rand);
      const out = g.files[0]!.content.toString();
      const expected = [...out.matchAll(/assert "(\w+)" in explain/g)].map((m) => m[1]!);
      const changed = expected.filter((v) => v !== "boom");
      expect(changed.length, out).toBe(DECOYS_PER_TEST);
      for (const v of changed) expect(written.has(v), `${v} in\n${out}`).toBe(false);
    }
  });

  it("c: the twins are registered in TEST_MAIN beside the renamed test; go subtests map through their parent", () => {
    const c = `static void a(void) { CHECK_STR(f(), "x"); }\nTEST_MAIN(T(a))\n`;
    const g = guardFiles("check-h", [{ path: "tests/t.c", content: Buffer.from(c) }], ["a"], rand);
    const out = g.files[0]!.content.toString();
    const names = [g.plan.runIds.a!, Object.keys(g.plan.decoys)[0]!];
    for (const n of names) {
      expect(out).toContain(`static void ${n}(void)`);
      expect(out).toContain(`T(${n})`);
    }
    const go = `func TestX(t *testing.T) {\n\tif F() != "a" {\n\t\tt.Fatal("x")\n\t}\n}\n`;
    const gg = guardFiles(
      "gotest",
      [{ path: "x_test.go", content: Buffer.from(go) }],
      ["TestX/sub", "TestX"],
      rand,
    );
    expect(gg.plan.runIds["TestX/sub"]).toBe(`${gg.plan.runIds.TestX}/sub`);
    expect(new Set(Object.values(gg.plan.decoys))).toEqual(new Set(["TestX/sub"]));
    expect(Object.keys(gg.plan.decoys).length).toBe(DECOYS_PER_TEST);
  });
});

describe("decoyVerdict", () => {
  const plan = { runIds: { real: "r1" }, decoys: { d1: "real" } };
  it("believes a run whose decoys failed, and one that reported nothing at all", () => {
    expect(
      decoyVerdict(
        new Map([
          ["r1", "passed"],
          ["d1", "failed"],
        ]),
        plan,
      ),
    ).toEqual({ ok: true });
    expect(decoyVerdict(new Map(), plan)).toEqual({ ok: true });
  });
  it("leaves a decoy that passed beside a failed twin to decoysPassedAlone (a flagged 0, not a plain one)", () => {
    const wrongGuess = new Map([
      ["r1", "failed"],
      ["d1", "passed"],
    ] as const);
    expect(decoyVerdict(wrongGuess, plan)).toEqual({ ok: true });
    expect(decoysPassedAlone(wrongGuess, plan)).toEqual([expect.stringContaining("'d1'")]);
    expect(
      decoysPassedAlone(
        new Map([
          ["r1", "passed"],
          ["d1", "failed"],
        ] as const),
        plan,
      ),
    ).toEqual([]);
    expect(decoysPassedAlone(new Map([["d1", "failed"]] as const), plan)).toEqual([]);
  });
  it("refuses a decoy that passed beside its passing twin, and a silent decoy whose twin passed", () => {
    expect(
      decoyVerdict(
        new Map([
          ["r1", "passed"],
          ["d1", "passed"],
        ]),
        plan,
      ).ok,
    ).toBe(false);
    expect(decoyVerdict(new Map([["r1", "passed"]]), plan)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("did not report"),
    });
  });
});

describe("freshName", () => {
  it("throws, naming the random source, when every draw repeats a taken name, instead of spinning forever", () => {
    const stuck = (n: number) => n - 1;
    const taken = new Set<string>();
    expect(freshName("pytest", stuck, taken)).toBe("test_ffffffffff");
    expect(() => freshName("pytest", stuck, taken)).toThrow(
      /10000 draws of a fresh pytest test name .* `rand` repeats itself/,
    );
    // a whole guard over a stuck source fails the same way (two graded tests need two names)
    const py = "def test_a():\n    assert f() == 1\n\n\ndef test_b():\n    assert f() == 2\n";
    expect(() =>
      guardFiles(
        "pytest",
        [{ path: "t.py", content: Buffer.from(py) }],
        ["t.py::test_a", "t.py::test_b"],
        stuck,
      ),
    ).toThrow(/repeats itself/);
  });
});
