import { describe, expect, it } from "vitest";
import { needsSending, pushNoteOf } from "../../src/rollout/group-sender.js";

describe("Atropos sends", () => {
  it("send a group unless it was sent or dropped", () => {
    expect(needsSending(undefined)).toBe(true);
    expect(needsSending("pending")).toBe(true);
    expect(needsSending("sent")).toBe(false);
    expect(needsSending("dropped")).toBe(false);
  });

  it("note what became of a push, with why when it was not sent", () => {
    expect(pushNoteOf("g1", { status: "sent", attempts: 1 })).toBe("atropos: group g1 sent");
    expect(pushNoteOf("g1", { status: "dropped", reason: "equal_scores", detail: "all 0" })).toBe(
      "atropos: group g1 dropped: all 0",
    );
    expect(pushNoteOf("g1", { status: "pending", detail: "queue full" })).toBe(
      "atropos: group g1 pending: queue full",
    );
  });
});
