import type { HiddenTests, RunVerdicts } from "./scorer.js";

/**
 * What the host reads after the agent's code ran is input the code chose: emissions, result
 * lines, the build's reach list. The host's reading of it must end in a verdict, never in a throw
 * (a throw is "no score": the trajectory dropped from training and pass@k as an infra failure).
 * When reading it throws all the same (a stack it recursed out of, a value it could not parse),
 * every graded test of every run fails and the reason is recorded as tampering: reward 0, gate
 * `tests_tampered`. Before any of the agent's code ran the throw is the machinery's and stays one.
 */

/** The reason recorded for a reading that threw. Pure. */
export function unjudgedReason(what: string, err: unknown): string {
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return `the scorer could not read ${what} after the agent's code ran (${message.slice(0, 200)}): fail closed`;
}

/** Every graded test of every run failed, with `why` as the tampering seen. Pure. */
export function unjudgedVerdicts(hidden: HiddenTests, repeat: number, why: string): RunVerdicts {
  const ids = hidden.suite
    ? [
        ...hidden.suite.failToPass.map((id) => ({ id, kind: "fail_to_pass" as const })),
        ...hidden.suite.passToPass.map((id) => ({ id, kind: "pass_to_pass" as const })),
      ]
    : hidden.commands.map((c) => ({ id: c.id, kind: c.kind }));
  const runs = Array.from({ length: Math.max(1, repeat) }, () =>
    ids.map(({ id, kind }) => ({ id, kind, passed: false, exitCode: 1, timedOut: false })),
  );
  return { runs, tampering: [why], rewritten: [] };
}

/**
 * `read()`, or — when it throws after the agent's code ran — `failed(reason)`. Before the
 * agent's code ran a throw is rethrown (the machinery's, retried as infra).
 */
export function readOrFailClosed<T>(
  agentRan: boolean,
  what: string,
  read: () => T,
  failed: (why: string) => T,
): T {
  try {
    return read();
  } catch (err) {
    if (!agentRan) throw err;
    return failed(unjudgedReason(what, err));
  }
}
