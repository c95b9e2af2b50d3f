import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadDataset } from "../../src/tasks/dataset.js";
import {
  formatRowReward,
  ROW_TERM_DEFAULTS,
  rowRewardReport,
  rowRewardTerms,
  rowTermCommands,
} from "../../src/tasks/row-reward.js";

const SWE_AGENT = fileURLToPath(
  new URL("../../../../tests/fixtures/swe-agent-13k-sample.jsonl", import.meta.url),
);

describe("rowRewardTerms", () => {
  it("gives a row its profile's build and lint commands, flags replacing them and --judge adding the judge", () => {
    expect(rowRewardTerms("go", {})).toEqual([
      { name: "build", command: "go build ./...", from: "default for go" },
      { name: "lint", command: "go vet ./...", from: "default for go" },
    ]);
    expect(rowRewardTerms("go", { buildCmd: "make", judge: true })).toEqual([
      { name: "build", command: "make", from: "--build-cmd" },
      { name: "lint", command: "go vet ./...", from: "default for go" },
      { name: "judge", from: "--judge" },
    ]);
    // the python profile ships no linter: build only
    expect(rowRewardTerms("python", {}).map((t) => t.name)).toEqual(["build"]);
    expect(rowRewardTerms("dev-base", {})).toEqual([]);
  });

  it("hands the scorer the commands and says what a row is scored by, or why nothing", () => {
    expect(rowTermCommands("rust", { lintCmd: "cargo fmt --check" })).toEqual({
      buildCmd: ROW_TERM_DEFAULTS.rust.build,
      lintCmd: "cargo fmt --check",
    });
    expect(rowTermCommands("dev-base", {})).toEqual({});
    expect(formatRowReward("go", rowRewardTerms("go", { judge: true }))).toBe(
      "build `go build ./...` (default for go), lint `go vet ./...` (default for go), judge (--judge)",
    );
    expect(formatRowReward("dev-base", [])).toMatch(/^nothing: .*pass --build-cmd, --lint-cmd or --judge$/);
  });
});

describe("rowRewardReport", () => {
  it("lists each accepted swe-agent row of the fixture with what it will be scored by", async () => {
    const { tasks } = await loadDataset(SWE_AGENT);
    const report = rowRewardReport(tasks, {});
    expect(report.length).toBe(tasks.length);
    for (const line of report) {
      expect(line.text).toBe(formatRowReward(line.profile, rowRewardTerms(line.profile, {})));
    }
    const go = report.find((l) => l.profile === "go");
    expect(go?.terms.map((t) => t.name)).toEqual(["build", "lint"]);
  });
});
