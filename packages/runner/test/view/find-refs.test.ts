import { describe, expect, it } from "vitest";
import { findRefs, type RefProbe } from "../../src/view/find-refs.js";

/** A tree of dirs as paths; a path ending in a file name marks that file. */
function probeOf(paths: string[]): RefProbe {
  const dirs = new Set<string>([""]);
  const files = new Set<string>();
  for (const p of paths) {
    const segs = p.split("/");
    const last = segs.at(-1) ?? "";
    const dirSegs = last.includes(".json") ? segs.slice(0, -1) : segs;
    if (last.includes(".json")) files.add(p);
    for (let i = 1; i <= dirSegs.length; i++) dirs.add(dirSegs.slice(0, i).join("/"));
  }
  const key = (segs: readonly string[]) => segs.join("/");
  return {
    listDirs: async (segs) => {
      const k = key(segs);
      return [...dirs]
        .filter(
          (d) =>
            d !== k &&
            (k === ""
              ? !d.includes("/") && d
              : d.startsWith(`${k}/`) && !d.slice(k.length + 1).includes("/")),
        )
        .map((d) => d.split("/").at(-1) ?? "");
    },
    has: async (segs, f) => files.has(key([...segs, f])),
  };
}

describe("findRefs: every run and eval under the viewer's root", () => {
  it("finds validate's nested runs (runs/validate-<id>/<task>/) and evals beside plain runs", async () => {
    const found = await findRefs(
      probeOf([
        "runs/r1/run.json",
        "runs/validate-x/task-a/run.json",
        "runs/validate-x/task-b/run.json",
        "evals/e1/report.json",
        "evals/e1/run/run.json",
        "notes",
      ]),
    );
    expect(found.runs.map((s) => s.join("/"))).toEqual([
      "runs/r1",
      "runs/validate-x/task-a",
      "runs/validate-x/task-b",
    ]);
    expect(found.evals.map((s) => s.join("/"))).toEqual(["evals/e1"]);
    expect(found.truncated).toBe(false);
  });
  it("the root itself as a run or an eval; never descends into trajectories or dot dirs", async () => {
    expect((await findRefs(probeOf(["run.json", "trajectories/x/run.json"]))).runs).toEqual([[]]);
    expect((await findRefs(probeOf(["report.json", "run/run.json"]))).evals).toEqual([[]]);
    expect((await findRefs(probeOf([".cache/r/run.json", "a/trajectories/r/run.json"]))).runs).toEqual([]);
  });
  it("stops at its depth and dir bounds, saying it stopped", async () => {
    expect((await findRefs(probeOf(["a/b/c/d/e/run.json"]))).runs).toEqual([]);
    const wide = Array.from({ length: 50 }, (_, i) => `d${i}/run.json`);
    const found = await findRefs(probeOf(wide), { depth: 4, dirs: 10 });
    expect(found.truncated).toBe(true);
    expect(found.runs.length).toBe(9);
  });
});
