import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { evalCompareCommand } from "../../../src/cli/commands/eval-compare.js";
import { buildReport, type TrialRow } from "../../../src/eval/report.js";
import { trialPaths } from "../../../src/eval/trial-files.js";
import { testProvenance } from "../../helpers/eval-provenance.js";
import { tempDir } from "../../helpers/temp-dir.js";

const trial = (item: string, n: number, reward: number): TrialRow => ({
  item,
  policy: "gold",
  trial: n,
  trajectoryId: `${item}-t${n}`,
  outcome: "completed",
  detail: "d",
  reward,
  passed: reward === 1,
  checks: {},
  flakyTests: [],
  turns: 1,
  toolCalls: 1,
  tokensIn: 1,
  tokensOut: 1,
  phases: { snapshotMs: 0, forkMs: 0, bootMs: 0, agentMs: 0, scoreMs: 0 },
  infraRetries: 0,
  links: trialPaths(item, "gold", n),
});

/** A real report.json (the eval's own builder) of items whose trials pass as `passes` says. */
async function writeEval(dir: string, passes: Record<string, number[]>) {
  const report = buildReport({
    evalId: dir.split("/").at(-1)!,
    createdAt: "2026-11-26T00:00:00.000Z",
    durationMs: 1,
    complete: true,
    provenance: testProvenance({ concurrency: 1, runId: "r" }),
    items: Object.keys(passes).map((id) => ({ id, kind: "task" as const, source: id })),
    policies: [{ spec: "gold", label: "gold" }],
    trials: Object.entries(passes).flatMap(([item, rs]) => rs.map((r, n) => trial(item, n, r))),
    itemErrors: [],
  });
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "report.json"), JSON.stringify(report));
}

function context(cwd: string) {
  const stdout = new PassThrough();
  let out = "";
  stdout.on("data", (c) => {
    out += c;
  });
  const ctx = { stdout, stderr: new PassThrough(), env: {}, cwd, signal: new AbortController().signal };
  return { ctx, out: () => out };
}

describe("flakegym eval compare", () => {
  it("prints regressions first, then fixes, with pass@1 and pass@k at the common k", async () => {
    await using tmp = await tempDir("flakegym-eval-compare-");
    await writeEval(join(tmp.path, "before"), { a: [1, 1, 1], b: [0, 0, 0], c: [1, 0, 0] });
    await writeEval(join(tmp.path, "after"), { a: [1, 0, 0], b: [0, 1, 0], c: [0, 1, 0] });
    const { ctx, out } = context(tmp.path);
    expect(await evalCompareCommand.run({ a: "before", to: "after", json: false }, ctx)).toBe(0);
    const lines = out().split("\n");
    expect(lines[0]).toBe("matched by: same item and policy");
    expect(lines[1]).toBe(
      "changes: regression 1, fix 1, outcomes changed 0".replace(", outcomes changed 0", ", same 1"),
    );
    const rows = lines.slice(4).filter(Boolean);
    expect(rows[0]).toMatch(/^regression\s+a × gold\s+3\/3 100%\s+1\/3 33%\s+-67%\s+k=3: 100% → 100%$/);
    expect(rows[1]).toMatch(/^fix\s+b × gold\s+0\/3 0%\s+1\/3 33%\s+\+33%/);
    expect(rows[2]).toMatch(/^same\s+c × gold/);
  });

  it("names the dir it could not read and what to give instead", async () => {
    await using tmp = await tempDir("flakegym-eval-compare-");
    await writeEval(join(tmp.path, "before"), { a: [1] });
    const { ctx } = context(tmp.path);
    await expect(evalCompareCommand.run({ a: "before", to: "nope", json: false }, ctx)).rejects.toThrow(
      /--to: cannot read .*nope\/report\.json/,
    );
  });
});
