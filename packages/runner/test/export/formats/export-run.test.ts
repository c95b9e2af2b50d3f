import { describe, expect, it } from "vitest";
import { collect, defaultExportPath, exportOutPath } from "../../../src/export/formats/export-run.js";
import { result } from "../../rollout/fixtures.js";

describe("collect", () => {
  it("one trajectory whose record throws is left out with its reason; the others are kept in order", async () => {
    const results = [0, 1, 2].map((index) => result({ taskId: "a", index }));
    const out = await collect(results, async (r) => {
      if (r.index === 1) throw new Error("token_ids must be a non-empty array of integers");
      return r.trajectoryId;
    });
    expect(out.items).toEqual(["a-t0", "a-t2"]);
    expect(out.excluded).toEqual([
      { trajectory_id: "a-t1", reason: "token_ids must be a non-empty array of integers" },
    ]);
  });
});

describe("exportOutPath", () => {
  const base = { runDir: "/r/run", format: "verl", fileFormat: "jsonl" } as const;
  it("--out naming an existing directory writes <format>.<file-format> into it", () => {
    expect(exportOutPath({ ...base, out: "/o", outIsDir: true })).toBe("/o/verl.jsonl");
    expect(exportOutPath({ ...base, fileFormat: "parquet", out: "/o", outIsDir: true })).toBe(
      "/o/verl.parquet",
    );
  });
  it("--out naming a file (or nothing yet) is the file; atif's --out is its directory; no --out is the default", () => {
    expect(exportOutPath({ ...base, out: "/o/x.jsonl", outIsDir: false })).toBe("/o/x.jsonl");
    expect(exportOutPath({ ...base, format: "atif", out: "/o", outIsDir: true })).toBe("/o");
    expect(exportOutPath({ ...base, outIsDir: false })).toBe(defaultExportPath("/r/run", "verl", "jsonl"));
  });
});
