import type { z } from "zod";
import type { Command } from "./command.js";
import { describeOptions, type OptionInfo } from "./option-schema.js";

function valueHint(o: OptionInfo): string {
  if (o.kind === "boolean") return "";
  if (o.choices) return ` <${o.choices.join("|")}>`;
  const k = o.kind === "array" ? o.itemKind : o.kind;
  return ` <${k === "number" ? "n" : (o.key.replace(/[A-Z].*/, "") ?? "value")}>`;
}

/** Renders one option table (flag, value, description, default) from a zod object. */
export function renderOptions(schema: z.ZodObject): string[] {
  const rows = describeOptions(schema).map((o) => {
    const left = `  ${o.flag}${valueHint(o)}`;
    const extras: string[] = [];
    if (o.required) extras.push("required");
    if (o.kind === "array") extras.push("repeatable");
    if (o.defaultValue !== undefined && !(Array.isArray(o.defaultValue) && o.defaultValue.length === 0)) {
      extras.push(`default: ${JSON.stringify(o.defaultValue)}`);
    }
    const right = `${o.description}${extras.length ? ` (${extras.join("; ")})` : ""}`;
    return [left, right] as const;
  });
  rows.push(["  --help", "show this help"]);
  const width = Math.min(34, Math.max(...rows.map(([l]) => l.length)) + 2);
  return rows.map(([l, r]) => (l.length >= width ? `${l}\n${" ".repeat(width)}${r}` : l.padEnd(width) + r));
}

/** A command's help; `subcommands` (commands whose path starts with its own, e.g. `eval compare`) are listed after its summary. */
export function renderCommandHelp(cmd: Command, subcommands: readonly Command[] = []): string {
  const pos = cmd.positional ? ` <${cmd.positional}>` : "";
  const lines = [`usage: flakegym ${cmd.path.join(" ")}${pos} [flags]`, "", cmd.summary];
  if (subcommands.length)
    lines.push(
      "",
      "subcommands:",
      ...subcommands.map((s) => `  flakegym ${s.path.join(" ")}  ${s.summary} (--help for its flags)`),
    );
  if (cmd.details) lines.push("", cmd.details);
  lines.push("", "flags:", ...renderOptions(cmd.options));
  if (cmd.examples?.length) lines.push("", "examples:", ...cmd.examples.map((e) => `  ${e}`));
  return `${lines.join("\n")}\n`;
}

export function renderMainHelp(commands: readonly Command[], version: string): string {
  const width = Math.max(...commands.map((c) => c.path.join(" ").length)) + 4;
  const lines = [
    `flakegym ${version} — scored, token-faithful Cline rollouts in isolated sandboxes`,
    "",
    "usage: flakegym <command> [flags]",
    "",
    "commands:",
    ...commands.map((c) => `  ${c.path.join(" ").padEnd(width)}${c.summary}`),
    "",
    "global flags:",
    "  --help, -h      show help (also after a command: flakegym tasks list --help)",
    "  --version, -V   print the flakegym version",
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * The command groups of a command table (`tasks`, `images`, `env`, …): each first word that starts
 * a command of more than one word and is not a command itself (`eval` runs an eval; its
 * `eval compare` is listed in eval's own help), with its commands in table order. Pure.
 */
export function commandGroups(commands: readonly Command[]): Map<string, Command[]> {
  const groups = new Map<string, Command[]>();
  const single = new Set(commands.filter((c) => c.path.length === 1).map((c) => c.path[0]!));
  for (const c of commands) {
    if (c.path.length < 2 || single.has(c.path[0]!)) continue;
    const name = c.path[0]!;
    groups.set(name, [...(groups.get(name) ?? []), c]);
  }
  return groups;
}

/**
 * The group `argv` asks about with nothing but `--help`/`-h` after it, or nothing at all
 * (`flakegym tasks`, `flakegym env --help`); undefined when argv names no group or says more. Pure.
 */
export function groupHelpRequest(commands: readonly Command[], argv: readonly string[]): string | undefined {
  const [first, ...rest] = argv;
  if (first === undefined || !commandGroups(commands).has(first)) return undefined;
  return rest.every((a) => a === "--help" || a === "-h") ? first : undefined;
}

/** A group's help: its subcommands and their summaries, from the command table. */
export function renderGroupHelp(group: string, members: readonly Command[]): string {
  const names = members.map((c) => c.path.slice(1).join(" "));
  const width = Math.max(...names.map((n) => n.length)) + 4;
  const lines = [
    `usage: flakegym ${group} <subcommand> [flags]`,
    "",
    "subcommands:",
    ...members.map((c, i) => `  ${names[i]!.padEnd(width)}${c.summary}`),
    "",
    `each subcommand has its own --help: flakegym ${members[0]!.path.join(" ")} --help`,
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * The CLI reference page (docs/reference/cli.md): every command's help, as `--help` prints it, under
 * a heading of its own, in the main help's order. `npm run docs:cli` writes it; the docs test checks
 * the page is what this renders now. Pure.
 */
export function renderCliReference(commands: readonly Command[]): string {
  const anchor = (c: Command) => `flakegym-${c.path.join("-")}`;
  const sub = (c: Command) =>
    commands.filter((s) => s.path.length > c.path.length && c.path.every((p, i) => s.path[i] === p));
  const lines = [
    "# Command reference",
    "",
    "<!-- written by `npm run docs:cli` from the commands' option schemas; the docs test fails when it is stale -->",
    "",
    "Every `flakegym` command, with the help `flakegym <command> --help` prints. Global flags:",
    "`--help` / `-h` (also after a command) and `--version` / `-V`.",
    "",
    ...commands.map((c) => `- [\`flakegym ${c.path.join(" ")}\`](#${anchor(c)}): ${c.summary}`),
  ];
  for (const c of commands) {
    lines.push(
      "",
      `## flakegym ${c.path.join(" ")}`,
      "",
      "```text",
      renderCommandHelp(c, sub(c)).trimEnd(),
      "```",
    );
  }
  return `${lines.join("\n")}\n`;
}
