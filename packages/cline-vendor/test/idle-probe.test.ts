import { describe, expect, it } from "vitest";
import { coreUnresponsive, idleEndOf } from "../src/driver.js";

describe("the idle limit asks the core before it blames the agent", () => {
  const idle = {
    kind: "timeout",
    limit: "idle",
    detail:
      "the agent's command printed nothing for 8000 ms (`yes`); raise the idle limit for long quiet commands",
  } as const;

  it("a core that answers leaves the idle timeout as it is", () => {
    expect(idleEndOf(idle, undefined)).toBe(idle);
    expect(coreUnresponsive(idle)).toBe(false);
  });

  it("a core that does not answer (frozen, SIGSTOP) is infra_error, retried, and its shutdown calls are skipped", () => {
    const o = idleEndOf(idle, "DEADLINE_EXCEEDED: no answer in 5000 ms");
    expect(o.kind).toBe("infra_error");
    expect(o.detail).toMatch(
      /^the Cline core stopped answering .*DEADLINE_EXCEEDED.* after the agent's command printed nothing/,
    );
    expect(coreUnresponsive(o)).toBe(true);
  });
});
