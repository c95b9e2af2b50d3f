import { describe, expect, it } from "vitest";
import { parseScriptedPlan } from "../../src/policy/scripted-plan.js";
import { formatIssuePath } from "../../src/text/zod-issues.js";

describe("zod issues named by their path", () => {
  it("formats array indices and keys as a reader writes them", () => {
    expect(formatIssuePath(["turns", 2, "tool_calls", 0, "name"])).toBe("turns[2].tool_calls[0].name");
    expect(formatIssuePath([])).toBe("(root)");
  });

  it("a bad tool call in a plan turn names turns[i].tool_calls[j].<field> (docs/reference/scripted-policy.md), not 'Invalid input'", () => {
    const plan = {
      version: 1,
      turns: [{ text: "a" }, { text: "b" }, { tool_calls: [{ nam: "write_to_file", arguments: {} }] }],
    };
    let message = "";
    try {
      parseScriptedPlan(plan, "p.json");
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain("turns[2].tool_calls[0].name:");
    expect(message).toContain("turns[2].tool_calls[0]: Unrecognized key");
    expect(message).not.toMatch(/turns\[2\]: Invalid input/);
  });

  it("a text turn with a wrong type names turns[i].text", () => {
    expect(() => parseScriptedPlan({ version: 1, turns: [{ text: 5 }] }, "p.json")).toThrow(
      /turns\[0\]\.text: /,
    );
  });
});
