import { describe, expect, it } from "vitest";
import { taskPythonOf } from "../../src/rollout/task-python.js";
import { choosePython, type PythonCandidate } from "../../src/snapshots/python-choice.js";
import {
  pythonJsonOf,
  rowPythonLine,
  rowPythonRejection,
  withPythonRefusals,
} from "../../src/snapshots/row-python.js";

const py39: PythonCandidate = {
  provider: "pyenv",
  interpreter: "/opt/pyenv/versions/3.9.18/bin/python3.9",
  version: "3.9.18",
  bind: "/opt/pyenv/versions/3.9.18",
};
const py311: PythonCandidate = { provider: "path", interpreter: "/usr/bin/python3", version: "3.11.2" };

describe("tasks check: which Python a row wants and who serves it", () => {
  it("names the provider and interpreter that would serve a row, and does not reject it", () => {
    const r = {
      row: 4,
      id: "sympy__sympy-24539",
      choice: choosePython("sympy__sympy-24539", "3.9", [py39], false),
    };
    expect(rowPythonLine(r)).toBe(
      "python: row 4 [sympy__sympy-24539]: wants 3.9, served by pyenv: 3.9.18 (/opt/pyenv/versions/3.9.18/bin/python3.9)",
    );
    expect(rowPythonRejection("rows.jsonl", r)).toBeUndefined();
    expect(pythonJsonOf(r)).toMatchObject({
      wanted: "3.9",
      kind: "match",
      provider: "pyenv",
      version: "3.9.18",
    });
  });

  it("rejects a row whose Python is not here, by field `python`, saying how to provide one", () => {
    const r = {
      row: 2,
      id: "sphinx-doc__sphinx-8721",
      choice: choosePython("sphinx-doc__sphinx-8721", "3.9", [py311], false),
    };
    const e = rowPythonRejection("rows.jsonl", r);
    expect(e).toMatchObject({ file: "rows.jsonl", row: 2, id: "sphinx-doc__sphinx-8721", field: "python" });
    expect(e?.reason).toContain("wants Python 3.9, and no CPython 3.9 was found");
    expect(e?.reason).toContain("found: 3.11.2 (path)");
    expect(e?.reason).toContain("--python 3.9=/path/to/python3.9");
    expect(e?.reason).toContain("uv python install 3.9");
    expect(e?.reason).toContain("pyenv install 3.9");
    expect(e?.reason).toContain("--allow-python-mismatch");
  });

  it("for a CPython older than nixpkgs ships (3.5: two django rows), names pyenv, not Nix or Debian", () => {
    const c = choosePython("django__django-7530", "3.5", [py311], false);
    expect(c.kind === "refused" && c.hint).toContain("`pyenv install 3.5` (built from source)");
    expect(c.kind === "refused" && c.hint).not.toContain("Nix profile");
    expect(c.kind === "refused" && c.hint).not.toContain("Debian");
  });

  it("an allowed mismatch is accepted and said so", () => {
    const r = { row: 1, id: "x", choice: choosePython("x", "3.6", [py311], true) };
    expect(rowPythonRejection("rows.jsonl", r)).toBeUndefined();
    expect(rowPythonLine(r)).toBe(
      "python: row 1 [x]: wants 3.6, none here: runs on the sandbox's python3 (--allow-python-mismatch)",
    );
  });
});

describe("run.json's record of a task's interpreter", () => {
  it("keeps wanted, used, matches and provider from the snapshot manifest", () => {
    expect(
      taskPythonOf({
        wanted: "3.9",
        used: "3.9.18",
        matches: true,
        provider: "pyenv",
        interpreter: "/opt/pyenv/versions/3.9.18/bin/python3.9",
      }),
    ).toEqual({ wanted: "3.9", used: "3.9.18", matches: true, provider: "pyenv" });
    expect(taskPythonOf(undefined)).toBeUndefined();
  });
});

describe("withPythonRefusals", () => {
  it("moves refused rows from accepted to rejected, in row order", () => {
    const other = { file: "f", row: 3, field: "repo", reason: "x" };
    const r = withPythonRefusals({ summary: { file: "f", accepted: 2, rejected: 1 }, rejected: [other] }, [
      { row: 1, id: "a", choice: choosePython("a", "3.9", [py311], false) },
      { row: 2, id: "b", choice: choosePython("b", "3.9", [py39], false) },
    ]);
    expect(r.summary).toEqual({ file: "f", accepted: 1, rejected: 2 });
    expect(r.rejected.map((e) => [e.row, e.field])).toEqual([
      [1, "python"],
      [3, "repo"],
    ]);
    expect([...r.refusedRows]).toEqual([1]);
  });
});
