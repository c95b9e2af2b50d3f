import { describe, expect, it } from "vitest";
import { z } from "zod";
import { renderOptions } from "../../src/cli/help.js";

describe("renderOptions", () => {
  it("generates the flag table from the schema's descriptions, defaults and choices", () => {
    const lines = renderOptions(
      z.object({
        groupSize: z.number().default(4).describe("trajectories per task"),
        backend: z.enum(["local", "nomad"]).default("local").describe("worker backend"),
        dataset: z.string().describe("dataset file"),
      }),
    ).join("\n");
    expect(lines).toMatch(/--group-size <n>\s+trajectories per task \(default: 4\)/);
    expect(lines).toMatch(/--backend <local\|nomad>\s+worker backend \(default: "local"\)/);
    expect(lines).toMatch(/--dataset <dataset>\s+dataset file \(required\)/);
    expect(lines).toMatch(/--help\s+show this help/);
  });
});
