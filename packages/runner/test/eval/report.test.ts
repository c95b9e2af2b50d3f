import { describe, expect, it } from "vitest";
import { evalExitCode } from "../../src/eval/exit-code.js";
import { failureMessage } from "../../src/eval/failure-message.js";
import { outcomeLook } from "../../src/eval/outcome-look.js";
import {
  buildReport,
  compareWithBaseline,
  EvalReport,
  policyLabels,
  sharedSnapshotMs,
  type TrialRow,
} from "../../src/eval/report.js";
import {
  cellTarget,
  esc,
  heatColor,
  POLICY_COLORS,
  policyColor,
  renderReportHtml,
  whyCell,
} from "../../src/eval/report-html.js";
import { renderSummaryMd } from "../../src/eval/summary-md.js";
import { failuresOf, itemDirName, trialPaths } from "../../src/eval/trial-files.js";
import { testProvenance } from "../helpers/eval-provenance.js";

const trial = (
  item: string,
  policy: string,
  n: number,
  reward: number | null,
  extra: Partial<TrialRow> = {},
): TrialRow => ({
  item,
  policy,
  trial: n,
  trajectoryId: `${item}-t${n}`,
  outcome: reward === null ? "infra_error" : "completed",
  detail: "d",
  reward,
  passed: reward === 1,
  checks: { "file exists: a": reward === 1 ? "passed" : "failed" },
  flakyTests: [],
  turns: 2,
  toolCalls: 2,
  tokensIn: 1000,
  tokensOut: 10,
  phases: { snapshotMs: 5, forkMs: 10, bootMs: 100, agentMs: 1000, scoreMs: 200 },
  infraRetries: 0,
  links: trialPaths(item, policy, n),
  ...extra,
});

function report(rows: TrialRow[], policies = ["gold", "scripted:plans/mixed.json"]): EvalReport {
  return buildReport({
    evalId: "e",
    createdAt: "2026-01-01T00:00:00.000Z",
    durationMs: 1000,
    complete: true,
    provenance: testProvenance(),
    items: [
      { id: "a", kind: "scenario", source: "a" },
      { id: "b<x>", kind: "task", source: "b" },
    ],
    policies: policies.map((spec, i) => ({ spec, label: policyLabels(policies)[i]! })),
    trials: rows,
    prices: { gold: { inputPerMTok: 1, outputPerMTok: 2 } },
    itemErrors: [],
  });
}

const MIXED = "scripted:plans/mixed.json";
const rows = [
  ...[0, 1, 2].map((n) => trial("a", "gold", n, 1)),
  ...[0, 1, 2].map((n) => trial("a", MIXED, n, n === 1 ? 0 : 1)),
  ...[0, 1, 2].map((n) =>
    trial("b<x>", "gold", n, n === 2 ? null : 1, n === 0 ? { flakyTests: ["file exists: a"] } : {}),
  ),
  ...[0, 1, 2].map((n) => trial("b<x>", MIXED, n, 0)),
];

describe("buildReport", () => {
  const r = report(rows);
  it("cells: statuses, infra errors out of n, and a schema-valid report", () => {
    expect(EvalReport.parse(r)).toEqual(r);
    const cell = (item: string, p: string) => r.cells.find((c) => c.item === item && c.policy === p)!;
    expect(cell("a", "gold").stats).toMatchObject({ status: "PASS", n: 3, c: 3 });
    expect(cell("a", MIXED).stats).toMatchObject({ status: "FLAKY", n: 3, c: 2 });
    expect(cell("b<x>", "gold")).toMatchObject({ infraErrors: 1, stats: { status: "PASS", n: 2, c: 2 } });
    expect(cell("b<x>", MIXED).stats.status).toBe("FAIL");
  });
  it("policies: pooled over items, tokens and cost (1000·6·1 + 10·6·2)/1e6 for gold", () => {
    const gold = r.policies[0]!;
    expect(gold).toMatchObject({
      label: "gold",
      tokensIn: 6000,
      tokensOut: 60,
      modelCalls: 12,
      toolCalls: 12,
    });
    expect(gold.cost).toBeCloseTo(0.00612, 9);
    expect(gold.pooled).toMatchObject({ n: 5, c: 5, statuses: { PASS: 2 } });
    expect(r.policies[1]!.cost).toBeUndefined();
    // mixed: items 2/3 and 0/3 → mean pass@1 = 1/3, pooled pass@3 = (1 + 0)/2
    expect(r.policies[1]!.pooled.pass1).toBeCloseTo(1 / 3, 9);
    expect(r.policies[1]!.pooled.passAtK[2]!.passAtK).toBeCloseTo(0.5, 9);
  });
  it("hidden-test flake rate: the flipped test, 1 of 2 scorings of b<x> (infra trial not a scoring)", () => {
    expect(r.testFlakes[0]).toEqual({
      item: "b<x>",
      test: "file exists: a",
      scorings: 5,
      flaky: 1,
      rate: 0.2,
    });
  });
});

describe("sharedSnapshotMs: a snapshot built once is counted once", () => {
  const snap = (item: string, policy: string, n: number, ms: number) =>
    trial(item, policy, n, 1, { phases: { snapshotMs: ms, forkMs: 1, bootMs: 1, agentMs: 1, scoreMs: 1 } });
  it("each item once (its largest record), split evenly among the policies that ran it", () => {
    const ts = [
      ...[0, 1, 2].map((n) => snap("a", "gold", n, 900)),
      ...[0, 1, 2].map((n) => snap("a", MIXED, n, 900)),
      snap("b", "gold", 0, 300),
      snap("b", "gold", 1, 0), // an infra retry that found the snapshot built
    ];
    expect(sharedSnapshotMs(ts)).toEqual({ totalMs: 1200, byPolicy: { gold: 450 + 300, [MIXED]: 450 } });
    expect(sharedSnapshotMs([])).toEqual({ totalMs: 0, byPolicy: {} });
  });
  it("in the report: the policies' snapshot shares add up to sharedMs, not to trials × policies × build", () => {
    const ts = [
      ...[0, 1, 2].map((n) => snap("a", "gold", n, 900)),
      ...[0, 1, 2].map((n) => snap("a", MIXED, n, 900)),
    ];
    const r = report(ts);
    expect(r.sharedMs).toEqual({ snapshotMs: 900 });
    expect(r.policies.map((p) => p.phasesMs.snapshotMs)).toEqual([450, 450]);
    expect(r.policies[0]!.phasesMs.forkMs).toBe(3); // the per-trial phases still sum
    expect(EvalReport.parse(r)).toEqual(r);
  });
});

describe("baseline comparison and exit codes", () => {
  it("a drop from 3/3 to 0/3 per cell is a regression (z = 2.449); the pooled scope too", () => {
    const base = report(rows.map((t) => ({ ...t, reward: 1, passed: true, outcome: "completed" as const })));
    const now = report(rows);
    const b = compareWithBaseline(now, base, "base.json")!;
    expect(b.regressions).toEqual([MIXED, `b<x> × ${MIXED}`]);
    expect(b.comparisons.find((c) => c.scope === `b<x> × ${MIXED}`)!.z).toBeCloseTo(2.449, 3);
    expect(evalExitCode({ ...now, baseline: b }, false)).toMatchObject({
      code: 1,
      why: expect.stringMatching(/regression vs base\.json/),
    });
  });
  it("infra errors exit 1, interrupted 130, failures alone 0", () => {
    expect(evalExitCode(report(rows), false).code).toBe(1);
    const clean = report(rows.filter((t) => t.reward !== null));
    expect(evalExitCode(clean, false)).toEqual({ code: 0 });
    expect(evalExitCode(clean, true).code).toBe(130);
  });
});

describe("summary.md and report.html", () => {
  const r = report(rows);
  it("summary.md: a table row per item, statuses per policy label", () => {
    const md = renderSummaryMd(r);
    expect(md).toContain("| item | gold | scripted-mixed |");
    expect(md).toContain("| a | PASS 3/3 | FLAKY 2/3 |");
    expect(md).toContain("| b<x> | PASS 2/2 (+1 infra) | FAIL 0/3 |");
    expect(md).toContain("### Flaky hidden tests (environment)");
  });
  it("report.html: one page, a CSP forbidding loads, the charts, escaped text, relative links", () => {
    const html = renderReportHtml(r);
    expect(html).toContain(`content="default-src 'none'`);
    for (const c of ["heatmap", "passk-chart", "reward-chart", "duration-chart", "tokens-chart"])
      expect(html).toContain(`chart ${c}`);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).toContain("b&lt;x&gt;");
    expect(html).not.toContain("b<x>");
    expect(html).toContain(`href="b_x_/gold/trial-0.log"`);
    expect((html.match(/<tr class="trial /g) ?? []).length).toBe(12);
  });
  it("helpers: escaping, colours, labels, directory names", () => {
    expect(esc(`<a href="x">'&`)).toBe("&lt;a href=&quot;x&quot;&gt;&#39;&amp;");
    expect(heatColor(1)).toBe("hsl(120, 65%, 55%)");
    expect(heatColor(null)).toBe("#d0d0d0");
    expect(
      policyLabels(["gold", "scripted:a/x.json", "scripted:b/x.json", "openai:http://h/v1#qwen3-8b"]),
    ).toEqual(["gold", "2-scripted-x", "3-scripted-x", "openai-qwen3-8b"]);
    expect(itemDirName("../etc")).toBe("__etc");
  });
});

describe("drilling down: from a cell to the trial and why it failed", () => {
  const failing = trial("a", MIXED, 1, 0, {
    failures: [{ test: "file exists: a", message: "AssertionError: expected 'a' to exist" }],
  });
  const r = report(rows.map((t) => (t.item === "a" && t.policy === MIXED && t.trial === 1 ? failing : t)));

  it("a cell opens its first failed trial, else its first trial", () => {
    expect(cellTarget(r, "a", MIXED)?.trajectoryId).toBe("a-t1");
    expect(cellTarget(r, "a", "gold")?.trial).toBe(0);
    expect(cellTarget(r, "b<x>", MIXED)?.trial).toBe(0);
    expect(cellTarget(r, "nope", MIXED)).toBeUndefined();
  });

  it("report.html: heat-map cells and trial rows carry the trial to open; rows say why they failed", () => {
    const html = renderReportHtml(r);
    expect(html).toContain('data-open="a-t1" aria-label="open trial 1 of a × scripted-mixed"');
    expect(html).toContain("AssertionError: expected &#39;a&#39; to exist");
    expect(html).toContain('class="chip bad">completed · unsolved');
    expect(html).toContain('class="chip ok">completed');
    expect(html).toContain('data-file="summary.md"');
    expect(html).toContain('window.parent.postMessage({flakegym:"open"');
  });

  it("whyCell: first failure and a count of the rest; nothing for a passed trial", () => {
    expect(whyCell(trial("a", "gold", 0, 1))).toBe("");
    const two = trial("a", "gold", 0, 0, {
      failures: [
        { test: "t1", message: "m1" },
        { test: "t2", message: "m2" },
      ],
    });
    expect(whyCell(two)).toBe("<b>t1</b>: <code>m1</code> <small>+1 more</small>");
    expect(whyCell(trial("a", "gold", 0, 0))).toBe("1 failed: file exists: a");
  });

  it("outcome looks: completed with reward 0 is not a success", () => {
    expect(outcomeLook("completed", 1)).toEqual({ tone: "ok", label: "completed" });
    expect(outcomeLook("completed", 0)).toEqual({ tone: "bad", label: "completed · unsolved" });
    expect(outcomeLook("completed", 0.5).tone).toBe("partial");
    expect(outcomeLook("limits_exceeded", 0, "max_turns")).toEqual({
      tone: "bad",
      label: "limits_exceeded (max_turns)",
    });
    expect(outcomeLook("infra_error", null).tone).toBe("infra");
  });

  it("gold and empty have fixed colours, and no policy is coloured like pass (green) or fail (red)", () => {
    const hue = (c: string) => Number(/^hsl\((\d+),/.exec(c)?.[1]);
    const sat = (c: string) => Number(/^hsl\(\d+, (\d+)%/.exec(c)?.[1]);
    expect(policyColor("gold")).toBe(POLICY_COLORS.gold);
    expect(policyColor("empty")).toBe(POLICY_COLORS.empty);
    const specs = ["gold", "empty", "openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B", "scripted:cheat-a.json"];
    for (let i = 0; i < 200; i++) specs.push(`model-${i}`);
    for (const s of specs) {
      const c = policyColor(s);
      if (sat(c) === 0) continue; // grey
      expect(hue(c) > 30 && hue(c) < 340, `${s}: ${c} is red`).toBe(true);
      expect(hue(c) < 80 || hue(c) > 160, `${s}: ${c} is green`).toBe(true);
    }
  });

  it("policy colours depend on the policy's name only", () => {
    expect(policyColor("gold")).toBe(policyColor("gold"));
    expect(policyColor("gold")).not.toBe(policyColor("empty"));
    const a = renderReportHtml(report(rows, ["gold", MIXED]));
    const b = renderReportHtml(
      report(
        rows.filter((t) => t.policy === "gold"),
        ["gold"],
      ),
    );
    const legend = (html: string) => /<i style="background:([^"]+)"><\/i>gold/.exec(html)?.[1];
    expect(legend(a)).toBe(policyColor("gold"));
    expect(legend(b)).toBe(policyColor("gold"));
  });

  it("summary.md carries pooled pass@k / pass^k per policy", () => {
    const md = renderSummaryMd(r);
    expect(md).toContain("### pass@k / pass^k (unbiased, mean over items)");
    expect(md).toContain("| policy | pass@1 / pass^1 | pass@2 / pass^2 |");
    expect(md).toMatch(/\| `gold` \| 100 % \/ 100 % \| 100 % \/ 100 % \|/);
  });

  it("failure messages: the assertion line, its continuation, else the last line", () => {
    expect(
      failureMessage(
        "running\nthread 'x' panicked at src/a.rs:3: assertion failed\n  left: 1\n right: 2\nok",
      ),
    ).toBe("thread 'x' panicked at src/a.rs:3: assertion failed left: 1 right: 2");
    expect(failureMessage("test x ... FAILED\nAssertionError: 1 != 2")).toBe("AssertionError: 1 != 2");
    expect(failureMessage("just\nthe end")).toBe("the end");
    expect(failureMessage(undefined)).toBe("no output captured");
    expect(failureMessage("E".repeat(1000) + " error").length).toBe(300);
  });

  it("failuresOf: each failed or missing check with its message from score.json testOutput", () => {
    expect(
      failuresOf({
        reward: 0,
        terms: [],
        testResults: { failToPass: { t1: "failed", t2: "passed" }, passToPass: { t3: "missing" } },
        testOutput: { t1: "AssertionError: nope" },
        flaky: [],
        touchedTestFiles: [],
        diffBytes: 0,
        durationMs: 1,
      }),
    ).toEqual([
      { test: "t1", message: "AssertionError: nope" },
      { test: "t3", message: "did not run (missing)" },
    ]);
  });
});
