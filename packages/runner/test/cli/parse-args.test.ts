import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseArgs } from "../../src/cli/parse-args.js";
import { UsageError } from "../../src/errors.js";

const schema = z.object({
  task: z.string().optional().describe("catalog task id"),
  groupSize: z.number().int().min(1).default(4).describe("trajectories per task"),
  backend: z.enum(["local", "podman", "nomad"]).default("local").describe("worker backend"),
  json: z.boolean().default(false).describe("machine-readable output"),
  tag: z.array(z.string()).default([]).describe("labels"),
});

function usage(argv: string[]): UsageError {
  try {
    parseArgs(schema, argv);
  } catch (e) {
    if (e instanceof UsageError) return e;
    throw e;
  }
  throw new Error(`expected a usage error for ${argv.join(" ")}`);
}

describe("parseArgs", () => {
  it("fills defaults from the schema", () => {
    expect(parseArgs(schema, [])).toEqual({ groupSize: 4, backend: "local", json: false, tag: [] });
  });

  it("reads --flag value, --flag=value, switches, --no-switch and repeated flags", () => {
    expect(
      parseArgs(schema, [
        "--task",
        "t1",
        "--group-size=8",
        "--json",
        "--tag",
        "a",
        "--tag=b",
        "--backend",
        "nomad",
      ]),
    ).toEqual({ task: "t1", groupSize: 8, backend: "nomad", json: true, tag: ["a", "b"] });
    expect(parseArgs(schema, ["--json", "--no-json"]).json).toBe(false);
  });

  it("rejects an unknown flag, naming it and suggesting the closest", () => {
    const e = usage(["--group-sise", "3"]);
    expect(e.message).toBe("unknown flag '--group-sise'");
    expect(e.hint).toContain("did you mean --group-size?");
  });

  it("rejects a bad enum value, naming the flag and the allowed values", () => {
    const e = usage(["--backend", "k8s"]);
    expect(e.message).toBe("--backend does not accept 'k8s'");
    expect(e.hint).toBe("allowed values: local, podman, nomad");
  });

  it("rejects values that fail the schema, naming the flag", () => {
    expect(usage(["--group-size", "0"]).message).toMatch(/^--group-size: .*>=\s?1/);
    expect(usage(["--group-size", "two"]).message).toBe("--group-size expects a number, got 'two'");
    expect(usage(["--task"]).message).toBe("--task needs a value");
    expect(usage(["--json=maybe"]).message).toContain("--json is a switch");
    expect(usage(["--task", "a", "--task", "b"]).message).toBe("--task was given more than once");
    expect(usage(["stray"]).message).toBe("unexpected argument 'stray'");
  });

  it("reports a missing required flag by name", () => {
    const req = z.object({ dataset: z.string().describe("JSONL or Parquet file") });
    expect(() => parseArgs(req, [])).toThrowError("missing required flag --dataset");
  });
});
