import { describe, expect, it } from "vitest";
import { renderVerify, stageLogTail } from "../../../src/cli/commands/verify.js";

describe("renderVerify", () => {
  it("a failure keeps its whole error (every line) and names the kept logs", () => {
    const text = renderVerify([
      {
        target: "./lib",
        ok: false,
        error:
          "E_SCAFFOLD: Cline did not write a valid flakegym.yml in 3 rounds; last problems:\n  stages.evaluation: missing",
        logs: "/s/20261126-1",
      },
      {
        target: "rows.jsonl",
        ok: false,
        contract: "generic",
        rollout: "completed",
        samples: 2,
        evaluation: "completed",
        score: null,
        reason: "the test command did not run (python -m unittest): exit 127",
        logs: "/s/20261126-2",
      },
    ]);
    expect(text).toBe(
      [
        "FAIL  ./lib: E_SCAFFOLD: Cline did not write a valid flakegym.yml in 3 rounds; last problems:",
        "        stages.evaluation: missing",
        "      logs: /s/20261126-1",
        "FAIL  rows.jsonl: rollout completed, evaluation completed (the test command did not run (python -m unittest): exit 127)",
        "      logs: /s/20261126-2",
        "0/2 targets passed",
        "",
      ].join("\n"),
    );
  });

  it("a stage that did not complete carries its outcome and the last lines of its stderr", () => {
    const log = [
      "$ sh rollout.sh",
      "--- stdout ---",
      "asked 1",
      "--- stderr ---",
      "",
      "Error: policy answered 500: x",
      "    at ask",
      "",
    ].join("\n");
    expect(stageLogTail(log)).toEqual(["Error: policy answered 500: x", "    at ask"]);
    expect(stageLogTail("no sections\nat all\n", 1)).toEqual(["at all"]);
    const text = renderVerify([
      {
        target: "rows.jsonl",
        ok: false,
        rollout: "agent_error",
        evaluation: "completed",
        stages: [
          "rollout agent_error: the stage script exited with 1; its stderr ends:",
          "  Error: policy answered 500: x",
        ],
        logs: "/s/1",
      },
    ]);
    expect(text).toBe(
      [
        "FAIL  rows.jsonl: rollout agent_error, evaluation completed",
        "      rollout agent_error: the stage script exited with 1; its stderr ends:",
        "        Error: policy answered 500: x",
        "      logs: /s/1",
        "0/1 targets passed",
        "",
      ].join("\n"),
    );
  });
});
