import { describe, expect, it } from "vitest";
import { viewDirProblem } from "../../src/view/view-dir.js";

describe("viewDirProblem: what `flakegym view <dir>` says instead of an empty app or a bare ENOENT", () => {
  const facts = { exists: true, isDir: true, runs: 0, evals: 0 };
  it("names a missing directory", () => {
    expect(viewDirProblem("rnus", { ...facts, exists: false, isDir: false })).toBe("rnus: no such directory");
  });
  it("names a file given as the directory", () => {
    expect(viewDirProblem("run.json", { ...facts, isDir: false })).toMatch(/run\.json is a file/);
  });
  it("refuses a directory with neither runs nor evals, saying where it looked", () => {
    expect(viewDirProblem(".", facts)).toMatch(
      /^no runs or evals under \.: neither a run dir \(run\.json\) nor an eval dir/,
    );
  });
  it("serves a directory with a run or an eval", () => {
    expect(viewDirProblem(".", { ...facts, runs: 1 })).toBeUndefined();
    expect(viewDirProblem(".", { ...facts, evals: 2 })).toBeUndefined();
  });
});
