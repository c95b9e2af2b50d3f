import { describe, expect, it } from "vitest";
import { rolloutEndNotes } from "../../../src/cli/commands/rollout.js";
import type { RunSummary } from "../../../src/rollout/summary.js";

const summary = (more: Partial<RunSummary>): RunSummary =>
  ({ out: "runs/r1", complete: true, ...more }) as unknown as RunSummary;

describe("rolloutEndNotes", () => {
  it("a complete run with nothing pending says nothing", () => {
    expect(rolloutEndNotes(summary({}), { code: 0 })).toEqual([]);
  });

  it("an incomplete run says how to finish; groups not sent to Atropos are counted", () => {
    expect(rolloutEndNotes(summary({ complete: false }), { code: 75 })).toEqual([
      "finish with: flakegym rollout --resume runs/r1",
    ]);
    expect(rolloutEndNotes(summary({ atropos: { pending: 2 } } as never), { code: 75 })).toEqual([
      "2 group(s) not sent to Atropos yet; finish with: flakegym rollout --resume runs/r1",
    ]);
  });

  it("a stopped run names its code and hint first; exit 1 says why", () => {
    const notes = rolloutEndNotes(
      summary({ complete: false, stopped: { code: "E_DISK_FULL", message: "no space" } } as never),
      { code: 1, why: "every trajectory failed" },
    );
    expect(notes[0]).toMatch(/^run stopped \[E_DISK_FULL\]: no space\n {2}hint: free space/);
    expect(notes.slice(1)).toEqual([
      "finish with: flakegym rollout --resume runs/r1",
      "every trajectory failed",
    ]);
    expect(rolloutEndNotes(summary({}), { code: 0, why: "ignored unless exit 1" })).toEqual([]);
  });
});
