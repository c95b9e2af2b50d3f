import { describe, expect, it } from "vitest";
import { groupKeyOf, sampleKeyOf, withoutRepeats } from "../../src/export/repeated-lines.js";

const group = (id: string, extra = {}) =>
  JSON.stringify({ tokens: [[1]], group_overrides: { group_id: id }, ...extra });

describe("withoutRepeats: one record delivered twice is exported once", () => {
  it("keeps the first of each group id; names a repeat, the same or another record", () => {
    const lines = [group("r:a"), group("r:b"), group("r:a"), group("r:a", { scores: [1] })];
    const { kept, repeats } = withoutRepeats(lines, groupKeyOf);
    expect(kept).toEqual([group("r:a"), group("r:b")]);
    expect(repeats).toEqual([
      {
        record: 3,
        why: "record 3 repeats group r:a of record 1 (the same record): left out, the first kept",
      },
      { record: 4, why: "record 4 repeats group r:a of record 1 (another record): left out, the first kept" },
    ]);
  });
  it("samples by trajectory id; lines without a key are kept as they are", () => {
    const s = (t?: string) =>
      JSON.stringify({ prompt: "p", completion: "c", reward: 1, ...(t ? { trajectory_id: t } : {}) });
    const { kept, repeats } = withoutRepeats([s("t0"), s(), s("t0"), s(), "[1]"], sampleKeyOf);
    expect(kept).toEqual([s("t0"), s(), s(), "[1]"]);
    expect(repeats.map((r) => r.record)).toEqual([3]);
  });
});
