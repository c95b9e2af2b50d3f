import { describe, expect, it } from "vitest";
import { groupRows, queryRows, type TrajectoryRow } from "../../src/view/query.js";
import { RowQuery } from "../../src/view/query-schema.js";
import { tokenSpans } from "../../src/view/token-spans.js";

const row = (id: string, task: string, reward: number | null, outcome = "completed"): TrajectoryRow => ({
  id,
  task,
  index: Number(id.split("-t")[1]),
  policy: "gold",
  outcome,
  detail: "",
  reward,
  turns: 2,
  tokensIn: 10,
  tokensOut: 5,
  timings: { snapshot: 1, fork: 1, boot: 10, agent: 100, score: 20 },
  infraRetries: 0,
  tampered: 0,
});
const rows = [
  row("a-t0", "a", 1),
  row("a-t1", "a", 0),
  row("b-t0", "b", null, "infra_error"),
  row("a-t10", "a", 0.5),
];

describe("queryRows", () => {
  it("filters by outcome, task and reward range", () => {
    expect(queryRows(rows, RowQuery.parse({ outcome: "infra_error" })).rows.map((r) => r.id)).toEqual([
      "b-t0",
    ]);
    expect(queryRows(rows, RowQuery.parse({ task: "b" })).total).toBe(1);
    expect(queryRows(rows, RowQuery.parse({ minReward: "0.5" })).rows.map((r) => r.id)).toEqual([
      "a-t0",
      "a-t10",
    ]);
  });
  it("sorts numerically and pages", () => {
    const q = RowQuery.parse({ sort: "reward", dir: "desc", size: "2", page: "0" });
    const p = queryRows(rows, q);
    expect(p.total).toBe(4);
    expect(p.rows.map((r) => r.id)).toEqual(["a-t0", "a-t10"]);
    expect(queryRows(rows, RowQuery.parse({})).rows.map((r) => r.id)).toEqual([
      "a-t0",
      "a-t1",
      "a-t10",
      "b-t0",
    ]);
  });
  it("rejects an unknown sort key", () => {
    expect(() => RowQuery.parse({ sort: "nope" })).toThrow();
  });
});

describe("groupRows", () => {
  it("aggregates per task, with tasks not started yet", () => {
    const g = groupRows(
      rows,
      new Map([
        ["c", { expected: 3 }],
        ["a", { expected: 3, atropos: "sent" }],
      ]),
    );
    const a = g.find((x) => x.task === "a")!;
    expect(a.rewards).toEqual([1, 0, 0.5]);
    expect(a.meanReward).toBeCloseTo(0.5);
    expect(a.atropos).toBe("sent");
    expect(g.find((x) => x.task === "b")!.meanReward).toBeNull();
    expect(g.find((x) => x.task === "c")!.trajectories).toBe(0);
  });
});

describe("tokenSpans", () => {
  it("splits masks into trained and masked runs and folds long masked runs only", () => {
    const masks = [...Array(300).fill(-100), 5, 6, -100, -100, 7, ...Array(250).fill(-100)];
    expect(tokenSpans(masks)).toEqual([
      { start: 0, end: 300, trained: false, folded: true },
      { start: 300, end: 302, trained: true, folded: false },
      { start: 302, end: 304, trained: false, folded: false },
      { start: 304, end: 305, trained: true, folded: false },
      { start: 305, end: 555, trained: false, folded: true },
    ]);
  });

  it("handles an empty sequence and an all-trained one", () => {
    expect(tokenSpans([])).toEqual([]);
    expect(tokenSpans([1, 2, 3])).toEqual([{ start: 0, end: 3, trained: true, folded: false }]);
  });
});
