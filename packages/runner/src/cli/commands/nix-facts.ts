import { match } from "ts-pattern";
import { z } from "zod";
import { type FlakeFacts, nixSystem, readFlakeFacts } from "../../nix/flake-facts.js";
import { defineCommand } from "../command.js";

export const nixFactsCommand = defineCommand({
  path: ["nix", "facts"],
  summary: "show what the flake builds per profile (devShell, image name:tag) when Nix is present",
  details:
    "Evaluates lib.flakegym.<system> of the flake with `nix eval --json` (image tags are the images' Nix output hashes, so this evaluates them; it builds nothing). Exits 1 when nix is not installed or there is no flake.",
  options: z.object({
    json: z.boolean().default(false).describe("print the facts as JSON"),
    system: z.string().optional().describe("Nix system to read (default: this machine's)"),
    flake: z.string().optional().describe("flake reference (default: $FLAKEGYM_FLAKE, else this checkout)"),
    overrideInput: z
      .array(z.string().regex(/^[A-Za-z0-9_-]+=\S+$/, "expected <input>=<flake reference>"))
      .default([])
      .describe("override a flake input: <input>=<flake reference>"),
    timeoutMs: z.number().int().positive().default(300_000).describe("deadline for the evaluation, in ms"),
  }),
  examples: [
    "flakegym nix facts",
    "flakegym nix facts --json --system aarch64-linux",
    "flakegym nix facts --override-input nixpkgs=path:/src/nixpkgs",
  ],
  async run(opts, ctx) {
    const extraArgs = opts.overrideInput.flatMap((o) => {
      const i = o.indexOf("=");
      return ["--override-input", o.slice(0, i), o.slice(i + 1)];
    });
    const r = await readFlakeFacts({
      ...(opts.flake !== undefined ? { flakeRef: opts.flake } : {}),
      ...(opts.system !== undefined ? { system: opts.system } : {}),
      extraArgs: extraArgs.length > 0 ? ["--no-write-lock-file", ...extraArgs] : [],
      env: ctx.env,
      signal: ctx.signal,
      timeoutMs: opts.timeoutMs,
    });
    return match(r)
      .with({ kind: "facts" }, ({ facts, flakeRef }) => {
        ctx.stdout.write(opts.json ? `${JSON.stringify(facts, null, 2)}\n` : renderFacts(facts, flakeRef));
        return 0;
      })
      .with({ kind: "nix-missing" }, ({ reason }) => {
        ctx.stderr.write(
          `flakegym: no flake facts: ${reason}; without Nix the runner uses the host toolchains\n`,
        );
        return 1;
      })
      .with({ kind: "no-flake" }, ({ reason }) => {
        ctx.stderr.write(`flakegym: no flake facts: ${reason}; pass --flake <ref> or set FLAKEGYM_FLAKE\n`);
        return 1;
      })
      .exhaustive();
  },
});

function renderFacts(facts: FlakeFacts, flakeRef: string): string {
  const lines = [
    `flake ${flakeRef} (${facts.system}${facts.system === nixSystem() ? "" : ", not this machine"})`,
  ];
  lines.push(`cline ${facts.cline.version}; runner: nix run .#${facts.runner.app} -- ...`, "");
  const rows = Object.entries(facts.profiles).map(([id, p]) => [
    id,
    p.devShell,
    `${p.image.name}:${p.image.tag}`,
    `.#${p.image.package}`,
  ]);
  lines.push(...table(["PROFILE", "DEVSHELL", "IMAGE", "BUILD"], rows), "");
  const snaps = Object.entries(facts.snapshots).map(([task, s]) => [
    task,
    s.profile,
    `${s.image.name}:${s.image.tag}`,
    `.#${s.image.package}`,
  ]);
  if (snaps.length > 0) lines.push(...table(["SNAPSHOT", "PROFILE", "IMAGE", "BUILD"], snaps));
  return `${lines.join("\n")}\n`;
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)) + 2);
  const fmt = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("")
      .trimEnd();
  return [fmt(head), ...rows.map(fmt)];
}
