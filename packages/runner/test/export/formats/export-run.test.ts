import { describe, expect, it } from "vitest";
import { collect } from "../../../src/export/formats/export-run.js";
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
