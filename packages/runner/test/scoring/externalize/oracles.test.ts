import { describe, expect, it } from "vitest";
import { testBlocks } from "../../../src/scoring/decoys/blocks.js";
import { guardHidden } from "../../../src/scoring/decoys/guard-hidden.js";
import { hiddenTestsOf } from "../../../src/scoring/hidden-tests.js";
import { installedHiddenFiles } from "../../../src/scoring/read-only.js";
import { loadTask } from "../../../src/tasks/catalog.js";
import { skipWithoutHostPython } from "../../helpers/host-python.js";

// Red-team class "custom-exception picker" (issue 42), measured on the scorer's own guard: decoys
// of an exception test expect one of six built-in classes, so code under test that reads the hidden
// file takes the copy expecting a class the language does not define as the real one, and raises
// (forges) only there. With externalized assertions the expected class is not in the file at all.

const PY_BUILTIN_EXCEPTIONS = new Set(
  "BaseException Exception ArithmeticError AssertionError AttributeError BufferError EOFError ImportError LookupError IndexError KeyError MemoryError NameError OSError OverflowError RecursionError ReferenceError RuntimeError StopIteration SyntaxError SystemError TypeError ValueError UnicodeError ZeroDivisionError NotImplementedError".split(
    " ",
  ),
);

const TASK = "tinyini-interpolation";
const EXC_TESTS = [
  "tests/test_interpolation.py::test_missing_reference_names_value_and_reference",
  "tests/test_interpolation.py::test_cycle_is_an_error_not_a_recursion",
  "tests/test_interpolation.py::test_self_reference_is_a_cycle",
];
const DRAWS = 10;

const noHostPython = skipWithoutHostPython("the externalized guard's run");

/** The class each copy of `id` expects (`pytest.raises(X)`), by copy name; the picker's input. */
function expectedClasses(
  files: readonly { content: Buffer }[],
  names: readonly string[],
): (string | undefined)[] {
  for (const f of files) {
    const text = f.content.toString("utf8");
    const { blocks } = testBlocks("pytest", text);
    const copies = names.map((n) => blocks.find((b) => b.name === n));
    if (copies.some((c) => c === undefined)) continue;
    return copies.map((c) => /pytest\.raises\(\s*([\w.]+)/.exec(text.slice(c!.body.start, c!.body.end))?.[1]);
  }
  return names.map(() => undefined);
}

/** Whether the picker takes the real copy (the first name) alone: the only one expecting a non-built-in class. */
const picksReal = (classes: readonly (string | undefined)[]) => {
  const custom = classes.map((c) => c !== undefined && !PY_BUILTIN_EXCEPTIONS.has(c.split(".").at(-1)!));
  return custom[0] === true && custom.filter(Boolean).length === 1;
};

describe("red team: custom-exception picker (tinyini-interpolation's exception tests)", async () => {
  const task = await loadTask(TASK);
  const hidden = await hiddenTestsOf(task, 1000);
  const suite = hidden.suite!;
  const repo = task.paths.sourceDir ?? `${task.dir}/repo`;
  const plain = (await installedHiddenFiles(hidden, repo, undefined))!;
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };

  // test_self_reference_is_a_cycle's only assertion is the class it expects: its decoys always
  // change it (the other two have message checks their decoys may change instead)
  it("wins against decoys alone: the exception-only test's real copy told, in every draw", async () => {
    let wins = 0;
    for (let d = 0; d < DRAWS; d++) {
      const g = await guardHidden(suite, plain, repo, rand, undefined, false);
      const told = EXC_TESTS.slice(2).every((id) => {
        const names = [
          g.plan.runIds[id]!,
          ...Object.keys(g.plan.decoys).filter((k) => g.plan.decoys[k] === id),
        ].map((r) => r.slice(r.lastIndexOf("::") + 2));
        return names.length > 1 && picksReal(expectedClasses(g.files, names));
      });
      if (told) wins++;
    }
    console.log(`custom-exception picker against decoys alone: ${wins} of ${DRAWS} draws`);
    expect(wins).toBe(DRAWS);
  }, 60_000);

  it.skipIf(noHostPython)(
    "has nothing to pick once the assertions are externalized: no copies, no expected class in the file",
    async () => {
      const g = await guardHidden(suite, plain, repo, rand);
      expect(g.report.externalized).toEqual(expect.arrayContaining(EXC_TESTS));
      expect(Object.keys(g.plan.decoys)).toEqual([]);
      const file = g.files.find((f) => f.path === "tests/test_interpolation.py")!.content.toString("utf8");
      for (const id of EXC_TESTS) {
        const name = id.slice(id.lastIndexOf("::") + 2);
        const [classes] = [expectedClasses([{ content: Buffer.from(file) }], [name])];
        expect(classes, id).toEqual([undefined]);
      }
      expect(file).not.toMatch(/pytest\.raises\(\s*InterpolationError/);
      expect(g.external.filter((s) => s.kind === "raises" && EXC_TESTS.includes(s.test))).toHaveLength(3);
    },
    60_000,
  );
});
