import { describe, expect, it } from "vitest";
import { emptyExportLine } from "../../../src/cli/commands/export.js";

describe("emptyExportLine", () => {
  it("is silent when the export wrote a record", () => {
    expect(
      emptyExportLine("prime", 3, 0, [
        { trajectory_id: "a-t0", reason: "no_logprobs", handling: "left_out" },
      ]),
    ).toBeUndefined();
  });

  it("names why nothing was written and what to do (records without logprobs)", () => {
    const line = emptyExportLine("prime", 0, 0, [
      { trajectory_id: "a-t0", reason: "no_logprobs", handling: "left_out" },
      { trajectory_id: "a-t0", reason: "no_logprobs", handling: "left_out" }, // its second segment
      { trajectory_id: "a-t1", reason: "no_logprobs", handling: "left_out" },
      { trajectory_id: "a-t2", reason: "no_sample", handling: "left_out" },
      { trajectory_id: "a-t3", reason: "earlier_segments", handling: "cut" },
    ]);
    expect(line).toBe(
      "wrote no prime record (left out: 2 trajectories no_logprobs, 1 trajectory no_sample); this format needs the sampled tokens' logprobs: roll out against an endpoint that returns them (docs/reference/trainers.md), or export --format verl|skyrl|trl|samples",
    );
  });

  it("counts trajectories whose record could not be built, and an empty run", () => {
    expect(emptyExportLine("verl", 0, 2, [])).toBe(
      "wrote no verl record (left out: 2 whose record could not be built); see the lines above for each trajectory",
    );
    expect(emptyExportLine("verl", 0, 0, [])).toMatch(
      /^wrote no verl record \(the run has no finished trajectory\)/,
    );
  });
});
