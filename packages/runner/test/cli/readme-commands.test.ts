import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Command } from "../../src/cli/command.js";
import { commands } from "../../src/cli/commands/index.js";
import { describeOptions } from "../../src/cli/option-schema.js";

const README = fileURLToPath(new URL("../../../../README.md", import.meta.url));

/** The `flakegym …` invocations of the README's command table, `a|b` alternatives expanded. */
function tableInvocations(readme: string): { inv: string; family: boolean }[] {
  const rows = readme.split("\n").filter((l) => l.startsWith("| `flakegym"));
  const cells = rows.map((r) => r.split(/(?<!\\)\|/)[1] ?? "");
  return cells
    .flatMap((c) => [...c.matchAll(/`(flakegym [^`]+)`/g)].map((m) => m[1]!.replaceAll("\\|", "|")))
    .flatMap((inv): { inv: string; family: boolean }[] => {
      const words = inv.split(" ");
      const alt = words.findIndex((w) => /^[a-z-]+(\|[a-z-]+)+$/.test(w));
      // a family (`env setup|rollout|…`): each member is named, not a full invocation
      return alt === -1
        ? [{ inv, family: false }]
        : words[alt]!.split("|").map((w) => ({ inv: [...words.slice(0, alt), w].join(" "), family: true }));
    });
}

function commandOf(words: readonly string[]): Command | undefined {
  return [...commands]
    .sort((a, b) => b.path.length - a.path.length)
    .find((c) => c.path.every((p, i) => words[i + 1] === p));
}

// the runner's tests also run alone (the Nix check's replay holds the runner package, not the README)
const noReadme = existsSync(README) ? undefined : `${README} is not here (the runner package checked alone)`;
if (noReadme) console.log(`skipped the README command-table check: ${noReadme}`);

describe.skipIf(noReadme !== undefined)("the README's command table matches the commands", () => {
  const invocations = noReadme ? [] : tableInvocations(readFileSync(README, "utf8"));

  it("names real commands, with flags they take and every flag they require", () => {
    expect(invocations.length).toBeGreaterThan(15);
    const problems: string[] = [];
    for (const { inv, family } of invocations) {
      const words = inv.split(/\s+/);
      const cmd = commandOf(words);
      if (!cmd) {
        problems.push(`${inv}: no such command`);
        continue;
      }
      const options = describeOptions(cmd.options);
      const flags = new Set(
        options.flatMap((o) => (o.kind === "boolean" ? [o.flag, `--no-${o.flag.slice(2)}`] : [o.flag])),
      );
      for (const f of words.filter((w) => /^--[a-z][a-z-]*$/.test(w))) {
        if (!flags.has(f)) problems.push(`${inv}: ${cmd.path.join(" ")} has no ${f}`);
      }
      for (const o of options.filter((x) => !family && x.required && x.key !== cmd.positional)) {
        if (!words.includes(o.flag)) problems.push(`${inv}: ${cmd.path.join(" ")} requires ${o.flag}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
