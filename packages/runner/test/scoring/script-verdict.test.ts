import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseScoringOutput } from "../../src/scoring/script-channel.js";
import {
  observeScript,
  type Phase,
  type ScriptObservation,
  type ScriptVerdict,
  scriptVerdict,
} from "../../src/scoring/script-verdict.js";
import { isStoppedStat } from "../../src/workers/local/sandbox.js";

// The fail-closed table: every phase × every observation, and what it must give. Nothing after the
// agent's code ran is infra or a setup error (those give no score at all); only the runner's own
// abort and a kill from outside the sandbox stay infra after it.

const killed = { step: "test.0.0", during: true };
const OBSERVATIONS: Record<string, ScriptObservation> = {
  aborted: { kind: "aborted" },
  killed_outside: { kind: "killed_outside" },
  frozen_outside: { kind: "frozen_outside" },
  anomaly: { kind: "anomaly", reason: "a forged line" },
  stopped_apply: { kind: "stopped", step: "apply", output: "patch failed" },
  stopped_install: { kind: "stopped", step: "install", output: "not a directory" },
  done: { kind: "done", exitCode: 0, missing: [] },
  done_exit_1: { kind: "done", exitCode: 1, missing: [] },
  done_missing: { kind: "done", exitCode: 0, missing: ["lint"] },
  timed_out: { kind: "timed_out" },
  ended_early: { kind: "ended_early" },
  ended_early_killed: { kind: "ended_early", killed },
};

type Want = ScriptVerdict["kind"] | "ran_closed" | "ran_killed";
const WANT: Record<Phase, Record<keyof typeof OBSERVATIONS, Want>> = {
  before_agent: {
    aborted: "infra",
    killed_outside: "infra",
    frozen_outside: "infra",
    anomaly: "infra",
    stopped_apply: "apply_failed",
    stopped_install: "setup_failed",
    done: "ran",
    done_exit_1: "infra",
    done_missing: "infra",
    timed_out: "infra",
    ended_early: "infra",
    ended_early_killed: "infra",
  },
  after_agent: {
    aborted: "infra",
    killed_outside: "infra",
    frozen_outside: "infra",
    anomaly: "ran_closed",
    stopped_apply: "ran_closed",
    stopped_install: "ran_closed",
    done: "ran",
    done_exit_1: "ran_closed",
    done_missing: "ran_closed",
    timed_out: "ran_closed",
    ended_early: "ran_closed",
    ended_early_killed: "ran_killed",
  },
};

const kindOf = (v: ScriptVerdict): Want =>
  v.kind !== "ran" ? v.kind : v.failClosed ? "ran_closed" : v.killed ? "ran_killed" : "ran";

describe("a scoring sandbox frozen from outside", () => {
  it("a timed-out exec whose sandbox process was stopped is frozen_outside (infra, retried), not the agent's held-up script", () => {
    const parsed = parseScoringOutput("");
    const exec = { exitCode: 137, timedOut: true };
    expect(observeScript(parsed, exec, false, []).observation.kind).not.toBe("frozen_outside");
    expect(observeScript(parsed, { ...exec, sandboxStopped: true }, false, []).observation).toEqual({
      kind: "frozen_outside",
    });
  });
  it("reads a stopped state from /proc/<pid>/stat, a name with spaces and parentheses included", () => {
    expect(isStoppedStat("21737 (bwrap) T 21700 21737 1 0")).toBe(true);
    expect(isStoppedStat("21737 (a) b) t 21700")).toBe(true);
    expect(isStoppedStat("21737 (bwrap) S 21700 21737 1 0")).toBe(false);
    expect(isStoppedStat("21737 (T) S 1")).toBe(false);
    expect(isStoppedStat("")).toBe(false);
  });
});

describe("scriptVerdict (phase × observation)", () => {
  const cases = (["before_agent", "after_agent"] as const).flatMap((phase) =>
    Object.keys(OBSERVATIONS).map((obs) => [phase, obs] as const),
  );
  it.each(cases)("%s × %s", (phase, obs) => {
    const v = scriptVerdict(phase, OBSERVATIONS[obs]!);
    expect(kindOf(v)).toBe(WANT[phase][obs]);
    // a fail-closed verdict always says why
    if (v.kind === "ran" && v.failClosed !== undefined) expect(v.failClosed.length).toBeGreaterThan(10);
  });

  it("never leaves a trajectory without a score for anything seen after the agent's code ran", () => {
    for (const [name, o] of Object.entries(OBSERVATIONS)) {
      const v = scriptVerdict("after_agent", o);
      const outside = name === "aborted" || name === "killed_outside" || name === "frozen_outside";
      expect(v.kind === "ran" || outside, name).toBe(true);
    }
  });
});

describe("observeScript", () => {
  const N = "0123456789abcdef01234567";
  const M = `FLAKEGYM-SCORE-${N}`;
  const sha = (s: string) => createHash("sha256").update(s).digest("hex");
  const block = (step: string, code: number, body: string) => {
    const b64 = body === "" ? "" : `${Buffer.from(body).toString("base64")}\n`;
    return `${M} result ${step} ${code} ${body.length} 0\n${b64}${M} end ${step} ${sha(b64)}\n`;
  };
  const exec0 = { exitCode: 0, timedOut: false };
  const installFirst = `FLAKEGYM-SCORE-HELLO ${N} sealed\n${block("install", 1, "no")}${M} stopped install\n`;
  const built = `FLAKEGYM-SCORE-HELLO ${N} sealed\n${M} start build\n${block("build", 0, "ok")}`;

  it("a failed install before any agent code ran is the task's; after the agent's build it is a 0", () => {
    const before = observeScript(parseScoringOutput(installFirst), exec0, false, []);
    expect(before).toMatchObject({
      phase: "before_agent",
      observation: { kind: "stopped", step: "install" },
    });
    const after = observeScript(
      parseScoringOutput(`${built}${block("install", 1, "no")}${M} stopped install\n`),
      exec0,
      false,
      [],
    );
    expect(after).toMatchObject({ phase: "after_agent", observation: { kind: "stopped", step: "install" } });
  });

  it("a `stopped install` line forged during a test step is an anomaly after the agent's code ran", () => {
    const forged = `${built}${block("install", 0, "")}${M} start test.0.0\n${M} stopped install\n`;
    expect(
      observeScript(parseScoringOutput(forged), { exitCode: 137, timedOut: false }, false, []),
    ).toMatchObject({
      phase: "after_agent",
      observation: { kind: "anomaly" },
    });
  });

  it("a block with a line written into it fails its checksum; a finished script missing a step is seen", () => {
    const good = `${built}${M} done\n`;
    expect(observeScript(parseScoringOutput(good), exec0, false, ["build", "lint"])).toMatchObject({
      observation: { kind: "done", missing: ["lint"] },
    });
    const injected = good.replace(
      `${M} end build`,
      `${Buffer.from("PASSED x").toString("base64")}\n${M} end build`,
    );
    expect(parseScoringOutput(injected).anomalies[0]).toMatchObject({
      afterAgent: true,
      reason: expect.stringContaining("checksum"),
    });
  });

  it("a channel without its greeting is infra only when nothing marker-like came through", () => {
    expect(observeScript(parseScoringOutput(""), exec0, false, [])).toMatchObject({
      phase: "before_agent",
      observation: { kind: "anomaly" },
    });
    expect(observeScript(parseScoringOutput(`${M} done\n`), exec0, false, [])).toMatchObject({
      phase: "after_agent",
    });
  });

  it("a kill from outside or our abort is the machinery's whatever the channel says", () => {
    const p = parseScoringOutput(`${built}${M} start test.0.0\n`);
    expect(
      observeScript(p, { exitCode: 137, timedOut: false, sandboxKilled: true }, false, []).observation.kind,
    ).toBe("killed_outside");
    expect(observeScript(p, { exitCode: 137, timedOut: false }, true, []).observation.kind).toBe("aborted");
    expect(observeScript(p, { exitCode: 137, timedOut: false }, false, []).observation).toEqual({
      kind: "ended_early",
      killed: { step: "test.0.0", during: true },
    });
  });
});
