import { describe, expect, it } from "vitest";
import { resumeNotes } from "../../src/rollout/run-rollout.js";

describe("resumeNotes", () => {
  it("says nothing for a clean run", () => {
    expect(resumeNotes({ tornBytes: 0, badLines: [] }, [])).toEqual([]);
  });

  it("names torn bytes, each bad line and each lost member, in that order", () => {
    const notes = resumeNotes({ tornBytes: 12, badLines: ["metrics.jsonl:3 is not JSON"] }, ["t-0001"]);
    expect(notes).toHaveLength(3);
    expect(notes[0]).toBe("resume: dropped 12 bytes of torn lines");
    expect(notes[1]).toContain("metrics.jsonl:3 is not JSON");
    expect(notes[1]).toContain("written again from its result.json");
    expect(notes[2]).toContain("t-0001 is lost");
    expect(notes[2]).toContain("not run again");
  });
});
