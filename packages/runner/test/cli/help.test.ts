import { describe, expect, it } from "vitest";
import { z } from "zod";
import { commands } from "../../src/cli/commands/index.js";
import { renderCommandHelp, renderOptions } from "../../src/cli/help.js";
import { POOL_DEFAULT_MIN_TRAJECTORIES, poolHelp, resolvePool } from "../../src/workers/pool/decisions.js";

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

describe("--pool help says what the pool does (poolHelp from poolByDefault/resolvePool)", () => {
  const help = (name: string) => {
    const cmd = commands.find((c) => c.path.join(" ") === name);
    if (!cmd) throw new Error(`no command ${name}`);
    return renderCommandHelp(cmd).replace(/\s+/g, " ");
  };
  it.each(["rollout", "eval", "serve"] as const)(
    "%s --help states the pool default its resolvePool applies",
    (command) => {
      expect(help(command)).toContain(poolHelp(command));
      const small = resolvePool({ command, trajectories: 1, concurrency: 4 });
      const large = resolvePool({ command, trajectories: POOL_DEFAULT_MIN_TRAJECTORIES, concurrency: 4 });
      expect(large?.size).toBe(4);
      if (small === undefined)
        expect(poolHelp(command)).toMatch(
          new RegExp(`off for ${command}s of fewer than ${POOL_DEFAULT_MIN_TRAJECTORIES}`),
        );
      else expect(poolHelp(command)).not.toMatch(/off for/);
    },
  );
  it("eval always pools, whatever its size (its help says no threshold)", () => {
    expect(resolvePool({ command: "eval", trajectories: 2, concurrency: 4 })?.size).toBe(2);
    expect(help("eval")).not.toMatch(/off for rollouts/);
  });
});

describe("validate --help says which backends run Cline agents", () => {
  it("does not claim podman cannot run them (the podman backend starts agent workers: tests/e2e/rollout-podman.test.ts)", () => {
    const validate = commands.find((c) => c.path.join(" ") === "validate")!;
    const text = renderCommandHelp(validate).replace(/\s+/g, " ");
    expect(text).not.toMatch(/podman[^.;]*cannot run/);
    expect(text).toMatch(/podman \(containers\), each running the Cline agent and the scorer/);
  });
});
