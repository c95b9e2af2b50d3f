import { describe, expect, it } from "vitest";
import {
  agentCouldReach,
  classifyOutcome,
  gatewayVerdictOf,
  reasonOf,
  workerExitGraceMs,
} from "../../src/rollout/classify-outcome.js";
import type { Outcome } from "../../src/run-format/schema.js";

const completed: Outcome = { kind: "completed", detail: "the agent attempted completion" };
const deadStream: Outcome = {
  kind: "infra_error",
  detail: "the core closed its state stream (did it exit?)",
};
const mistakes: Outcome = {
  kind: "agent_error",
  detail: "Cline reached its consecutive-mistake limit",
  ask: "x",
};
const idle: Outcome = { kind: "timeout", limit: "idle", detail: "no new message" };
const tools: Outcome = { kind: "limits_exceeded", limit: "tool_calls", detail: "tool call 201" };
const cancelled: Outcome = {
  kind: "infra_error",
  cancelled: true,
  detail: "cancelled by the caller (Ctrl-C)",
};

describe("classifyOutcome", () => {
  it.each([
    [
      "a completion stands, whatever the worker did afterwards",
      { driver: completed, workerExit: { reason: "memory" as const } },
      { kind: "completed" },
    ],
    [
      "a dead stream after a memory kill is limits_exceeded/memory",
      {
        driver: deadStream,
        workerExit: { reason: "memory" as const, detail: "memory limit 512 MiB reached" },
      },
      { kind: "limits_exceeded", limit: "memory" },
    ],
    [
      "the pids limit",
      { driver: mistakes, workerExit: { reason: "pids" as const } },
      { kind: "limits_exceeded", limit: "pids" },
    ],
    [
      "the disk quota",
      { driver: deadStream, workerExit: { reason: "disk" as const } },
      { kind: "limits_exceeded", limit: "disk" },
    ],
    [
      "CPU time",
      { driver: deadStream, workerExit: { reason: "cpu_time" as const } },
      { kind: "limits_exceeded", limit: "cpu_time" },
    ],
    [
      "the worker's wall clock is a timeout",
      { driver: deadStream, workerExit: { reason: "wall_clock" as const } },
      { kind: "timeout", limit: "wall_clock" },
    ],
    [
      "a crashed worker is infra_error",
      { driver: deadStream, workerExit: { reason: "crashed" as const, detail: "agent exited (code 1)" } },
      { kind: "infra_error" },
    ],
    [
      "a stopped worker changes nothing",
      { driver: mistakes, workerExit: { reason: "stopped" as const } },
      { kind: "agent_error" },
    ],
    [
      "the gateway's budget refusal names the budget",
      {
        driver: mistakes,
        gateway: {
          terminal: {
            kind: "limits_exceeded" as const,
            limit: "completion_tokens" as const,
            message: "spent",
          },
        },
      },
      { kind: "limits_exceeded", limit: "completion_tokens" },
    ],
    [
      "the gateway's watchdog on the model server is policy_error",
      {
        driver: idle,
        gateway: { terminal: { kind: "timeout" as const, message: "no first byte in 120000 ms" } },
      },
      { kind: "policy_error" },
    ],
    [
      "failing upstream ended by the gateway is policy_error",
      {
        driver: deadStream,
        gateway: { terminal: { kind: "policy_error" as const, message: "3 upstream failures in a row" } },
      },
      { kind: "policy_error" },
    ],
    [
      "a broken SSE stream on the last call makes the agent's give-up a policy_error",
      { driver: mistakes, gateway: { lastCallFailure: "upstream stream ended without [DONE]" } },
      { kind: "policy_error" },
    ],
    [
      "a driver limit stands over a failed last call",
      { driver: tools, gateway: { lastCallFailure: "502" } },
      { kind: "limits_exceeded", limit: "tool_calls" },
    ],
    ["the idle limit stands", { driver: idle, gateway: {} }, { kind: "timeout", limit: "idle" }],
    [
      "a task aborted by the worker's exit takes the worker's reason",
      { driver: cancelled, workerExit: { reason: "memory" as const } },
      { kind: "limits_exceeded", limit: "memory" },
    ],
    [
      "a task aborted by the gateway's verdict takes the gateway's reason",
      {
        driver: cancelled,
        gateway: {
          terminal: { kind: "limits_exceeded" as const, limit: "model_requests" as const, message: "51" },
        },
      },
      { kind: "limits_exceeded", limit: "model_requests" },
    ],
    [
      "a task aborted by a crashed worker is infra_error",
      { driver: cancelled, workerExit: { reason: "crashed" as const, detail: "agent exited (code 137)" } },
      { kind: "infra_error", detail: expect.stringMatching(/the worker crashed: agent exited/) },
    ],
    [
      "an idle timeout of a worker frozen from outside is infra_error (retried), not the agent's",
      {
        driver: idle,
        workerExit: { reason: "frozen" as const, detail: "frozen from outside its sandbox: x" },
      },
      { kind: "infra_error", detail: "the worker was frozen from outside its sandbox: x" },
    ],
    [
      "a wall-clock timeout of a frozen worker is infra_error, and so is the policy silence it caused",
      {
        driver: { kind: "timeout" as const, limit: "wall_clock" as const, detail: "ran longer" },
        workerExit: { reason: "frozen" as const, detail: "frozen from outside its sandbox: x" },
        gateway: { terminal: { kind: "timeout" as const, message: "the model server sent nothing" } },
      },
      { kind: "infra_error" },
    ],
    [
      "a frozen worker does not hide a completion",
      { driver: completed, workerExit: { reason: "frozen" as const, detail: "x" } },
      { kind: "completed" },
    ],
    ["nothing else known: the driver's outcome", { driver: deadStream }, { kind: "infra_error" }],
  ])("%s", (_, evidence, expected) => {
    expect(classifyOutcome(evidence)).toMatchObject(expected);
  });

  it("details say what was seen", () => {
    const o = classifyOutcome({
      driver: deadStream,
      workerExit: { reason: "memory", detail: "memory limit 512 MiB reached" },
    });
    expect(o.detail).toBe("the worker hit its memory limit: memory limit 512 MiB reached");
    const p = classifyOutcome({ driver: mistakes, gateway: { lastCallFailure: "stream broke" } });
    expect(p.detail).toContain("stream broke");
    expect(p.detail).toContain("agent_error");
  });
});

describe("who could reach the dead or frozen core decides (issue 42)", () => {
  const frozen: Outcome = {
    kind: "infra_error",
    detail: "the Cline core stopped answering (no reply to a state probe in 30 s)",
  };
  const crashed = { reason: "crashed" as const, detail: "agent exited (code null): signal SIGKILL" };
  const one = { users: "one" as const, commandsRan: true };
  const apart = { users: "apart" as const, commandsRan: true };
  const oneNoCommand = { users: "one" as const, commandsRan: false };
  const stoppedInReach = { reason: "frozen" as const, withinReach: true, detail: "stopped: x" };
  it.each([
    ["one user, a command ran, the core froze: the policy's", { driver: frozen, reach: one }, "agent_error"],
    [
      "one user, a command ran, the core was killed",
      { driver: cancelled, workerExit: crashed, reach: one },
      "agent_error",
    ],
    ["one user, a dead stream after a command", { driver: deadStream, reach: one }, "agent_error"],
    [
      "apart, the core froze: out of the agent's reach, infra",
      { driver: frozen, reach: apart },
      "infra_error",
    ],
    [
      "apart, the core was killed: infra",
      { driver: cancelled, workerExit: crashed, reach: apart },
      "infra_error",
    ],
    ["one user, before any command ran: infra", { driver: frozen, reach: oneNoCommand }, "infra_error"],
    [
      "one user, killed before any command ran: infra",
      { driver: cancelled, workerExit: crashed, reach: oneNoCommand },
      "infra_error",
    ],
    ["nothing known of the users: as before, infra", { driver: frozen }, "infra_error"],
    ["the caller's Ctrl-C is never the agent's", { driver: cancelled, reach: one }, "infra_error"],
    [
      "a limit still names the limit (one user)",
      { driver: deadStream, workerExit: { reason: "memory" as const }, reach: one },
      "limits_exceeded",
    ],
    ["a completion stands (one user)", { driver: completed, workerExit: crashed, reach: one }, "completed"],
    [
      "one user, a command ran, the supervisor stopped (within reach): the policy's, scored, not retried",
      { driver: frozen, workerExit: stoppedInReach, reach: one },
      "agent_error",
    ],
    [
      "one user, the supervisor stopped before any command ran: infra",
      { driver: frozen, workerExit: stoppedInReach, reach: oneNoCommand },
      "infra_error",
    ],
    [
      "a stop within reach weighed on two users (cannot happen there): infra",
      { driver: frozen, workerExit: stoppedInReach, reach: apart },
      "infra_error",
    ],
  ])("%s", (_, evidence, kind) => {
    expect(classifyOutcome(evidence).kind).toBe(kind);
  });

  it("says who could reach it, and keeps what was seen", () => {
    const o = classifyOutcome({ driver: cancelled, workerExit: crashed, reach: one });
    expect(o.detail).toContain("signal SIGKILL");
    expect(o.detail).toMatch(/same user as the core/);
    expect(agentCouldReach(undefined)).toBe(false);
    expect(agentCouldReach(apart)).toBe(false);
    expect(agentCouldReach(one)).toBe(true);
  });
});

describe("gatewayVerdictOf", () => {
  it("the last call the model server answered decides; refused and aborted calls are skipped", () => {
    expect(
      gatewayVerdictOf(undefined, [
        { status: "ok" },
        { status: "upstream_error", error: "boom" },
        { status: "aborted", error: "client gone" },
      ]),
    ).toEqual({ lastCallFailure: "boom" });
    expect(
      gatewayVerdictOf(undefined, [{ status: "upstream_error", error: "boom" }, { status: "ok" }]),
    ).toEqual({});
    expect(gatewayVerdictOf(undefined, [{ status: "timeout" }])).toEqual({ lastCallFailure: "timeout" });
    expect(gatewayVerdictOf(undefined, [])).toEqual({});
    const terminal = { kind: "policy_error" as const, message: "m", at: "t" };
    expect(gatewayVerdictOf(terminal, [])).toEqual({ terminal });
  });
});

describe("workerExitGraceMs", () => {
  it("waits for the worker's word only when the core's end may hide a limit kill", () => {
    expect(workerExitGraceMs(deadStream)).toBeGreaterThan(0);
    expect(workerExitGraceMs(mistakes)).toBeGreaterThan(0);
    for (const o of [completed, idle, tools, { kind: "policy_error", detail: "d" } as Outcome])
      expect(workerExitGraceMs(o)).toBe(0);
  });
});

describe("reasonOf", () => {
  it("is {kind, limit?, detail}", () => {
    expect(reasonOf(tools)).toEqual({
      kind: "limits_exceeded",
      limit: "tool_calls",
      detail: "tool call 201",
    });
    expect(reasonOf(mistakes)).toEqual({ kind: "agent_error", detail: mistakes.detail });
  });
});
