import { describe, expect, it } from "vitest";
import { z } from "zod";
import { commands } from "../../src/cli/commands/index.js";
import { commandGroups, groupHelpRequest, renderCommandHelp, renderOptions } from "../../src/cli/help.js";
import { PythonFlags } from "../../src/snapshots/python-options.js";
import { POOL_DEFAULT_MIN_TRAJECTORIES, poolHelp, resolvePool } from "../../src/workers/pool/decisions.js";
import { runCliCaptured } from "../helpers/cli.js";

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

describe("command groups answer --help and a bare invocation with their subcommands", () => {
  const cli = (argv: string[]) => runCliCaptured(argv, { env: {} });
  const groups = [...commandGroups(commands)];

  it("finds every group of the table, the ones the README names among them", () => {
    expect(groups.map(([g]) => g)).toEqual(
      expect.arrayContaining(["tasks", "images", "env", "nomad", "snapshot", "nix"]),
    );
    for (const [g, members] of groups) for (const m of members) expect(m.path[0]).toBe(g);
  });

  it("groupHelpRequest: only a group word followed by nothing or --help/-h", () => {
    expect(groupHelpRequest(commands, ["tasks"])).toBe("tasks");
    expect(groupHelpRequest(commands, ["tasks", "-h"])).toBe("tasks");
    expect(groupHelpRequest(commands, ["tasks", "frobnicate"])).toBeUndefined();
    expect(groupHelpRequest(commands, ["rollout"])).toBeUndefined();
    expect(groupHelpRequest(commands, [])).toBeUndefined();
  });

  it.each(groups.map(([g]) => g))(
    "flakegym %s and flakegym %s --help list every subcommand, exit 0",
    async (g) => {
      const members = commandGroups(commands).get(g)!;
      for (const argv of [[g], [g, "--help"]]) {
        const r = await cli(argv);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain(`usage: flakegym ${g} <subcommand>`);
        for (const m of members) expect(r.stdout).toContain(`  ${m.path.slice(1).join(" ")} `);
        expect(r.stdout).toContain(m0Help(members[0]!.path));
      }
    },
  );

  it("a command that also has subcommands (eval, eval compare) runs as itself; its help lists them", async () => {
    expect(commandGroups(commands).has("eval")).toBe(false);
    const r = await cli(["eval", "--help"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("usage: flakegym eval ");
    expect(r.stdout).toContain("flakegym eval compare");
  });

  it("an unknown subcommand of a group is still a usage error listing the group's commands", async () => {
    const r = await cli(["tasks", "frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'tasks frobnicate'");
    expect(r.stderr).toContain("tasks list");
  });
});

const m0Help = (path: readonly string[]) => `flakegym ${path.join(" ")} --help`;

describe("--python and --allow-python-mismatch: one definition, on every command that builds python snapshots", () => {
  it.each(["rollout", "eval", "validate", "snapshot build", "tasks check"] as const)(
    "%s takes them",
    (name) => {
      const cmd = commands.find((c) => c.path.join(" ") === name);
      if (!cmd) throw new Error(`no command ${name}`);
      const shape = (cmd.options as z.ZodObject<z.ZodRawShape>).shape;
      // the same schema objects (snapshots/python-options.ts), not copies
      expect(shape.python).toBe(PythonFlags.python);
      expect(shape.allowPythonMismatch).toBe(PythonFlags.allowPythonMismatch);
      expect(renderCommandHelp(cmd)).toMatch(/--python <python>/);
    },
  );
});
