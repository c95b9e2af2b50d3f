import { z } from "zod";

/**
 * Which CPython a snapshot's venv is made with, decided from data (python-providers.ts finds the
 * candidates): the first provider in PYTHON_PROVIDERS order with an interpreter of the wanted
 * major.minor (its newest patch release). A task never runs silently on another version: without
 * one, the choice is a refusal naming what was wanted, what was found and how to provide it,
 * unless the user allowed a mismatch (then the sandbox's own python3 is used and recorded as such).
 * Pure.
 */

/** Where an interpreter came from, in the order they are tried. */
export const PYTHON_PROVIDERS = ["user", "nix", "uv", "pyenv", "path"] as const;
export type PythonProvider = (typeof PYTHON_PROVIDERS)[number];

/** One interpreter found on this machine. */
export const PythonCandidate = z
  .object({
    provider: z.enum(PYTHON_PROVIDERS).describe("where it was found"),
    interpreter: z.string().describe("absolute path of its `pythonX.Y` executable"),
    version: z.string().describe("its full version, `X.Y.Z` (as it reported it)"),
    bind: z
      .string()
      .optional()
      .describe("host directory bound read-only at the same path into every sandbox (absent: under /usr)"),
  })
  .strict();
export type PythonCandidate = z.infer<typeof PythonCandidate>;

/** `X.Y` of a version (`3.9`, `3.9.18`, `Python 3.9.18`), or undefined. Pure. */
export function minorOf(version: string): string | undefined {
  const m = /(?:^|\s|python)(\d+)\.(\d+)(?:\.\d+)?/i.exec(version.trim());
  return m ? `${m[1]}.${m[2]}` : undefined;
}

/** The `X.Y.Z` in an interpreter's report (`3.9.18`, `Python 3.9.18+`), or undefined. Pure. */
export function fullVersionOf(text: string): string | undefined {
  return /(\d+\.\d+\.\d+)/.exec(text)?.[1];
}

/** Compares `X.Y.Z` versions numerically. Pure. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The interpreters a user named: `3.9=/opt/py39/bin/python3.9`, several separated by `,` or `;`
 * (FLAKEGYM_PYTHON, or one per `--python`). Returns the pairs, or what is wrong with an entry. Pure.
 */
export function parseUserPythons(
  text: string,
): { ok: true; pythons: { minor: string; path: string }[] } | { ok: false; reason: string } {
  const pythons: { minor: string; path: string }[] = [];
  for (const entry of text.split(/[,;]/).map((e) => e.trim())) {
    if (entry === "") continue;
    const m = /^(\d+\.\d+)=(\/.+)$/.exec(entry);
    if (!m)
      return {
        ok: false,
        reason: `'${entry}' is not VERSION=/absolute/path/to/pythonX.Y (e.g. 3.9=/opt/python3.9/bin/python3.9)`,
      };
    pythons.push({ minor: m[1]!, path: m[2]! });
  }
  return { ok: true, pythons };
}

/** The choice for one task, recorded in its snapshot's manifest. */
export type PythonChoice =
  | { readonly kind: "match"; readonly wanted: string; readonly candidate: PythonCandidate }
  | {
      readonly kind: "mismatch-allowed";
      readonly wanted: string;
      readonly found: readonly PythonCandidate[];
      readonly note: string;
    }
  | {
      readonly kind: "refused";
      readonly wanted: string;
      readonly found: readonly PythonCandidate[];
      readonly reason: string;
      readonly hint: string;
    };

/** How a user provides an interpreter of `minor`, named in a refusal. */
export function howToProvide(minor: string): string {
  return [
    `name one: --python ${minor}=/path/to/python${minor} (or FLAKEGYM_PYTHON=${minor}=/path/to/python${minor})`,
    compareVersions(minor, "3.9") >= 0
      ? `or install it where flakegym looks: \`uv python install ${minor}\`, \`pyenv install ${minor}\`, a Nix profile with python${minor.replace(".", "")}, or python${minor} on PATH (e.g. Debian's python${minor} package)`
      : // nixpkgs ships python39 and later only; a current distribution has no such old CPython
        `or install it where flakegym looks: \`pyenv install ${minor}\` (built from source), \`uv python install ${minor}\` where uv has a build of it, or python${minor} on PATH`,
    "or accept another version with --allow-python-mismatch (recorded in the manifest and the run)",
  ].join("; ");
}

/** Chooses the interpreter for a task wanting `wanted` (`X.Y`) among `found` (see the module comment). Pure. */
export function choosePython(
  taskId: string,
  wanted: string,
  found: readonly PythonCandidate[],
  allowMismatch: boolean,
): PythonChoice {
  const minor = minorOf(wanted) ?? wanted;
  for (const provider of PYTHON_PROVIDERS) {
    const same = found
      .filter((c) => c.provider === provider && minorOf(c.version) === minor)
      .sort((a, b) => compareVersions(b.version, a.version));
    if (same[0]) return { kind: "match", wanted: minor, candidate: same[0] };
  }
  const seen =
    found.length === 0
      ? "no interpreter at all"
      : [...new Set(found.map((c) => `${c.version} (${c.provider})`))].join(", ");
  if (allowMismatch)
    return {
      kind: "mismatch-allowed",
      wanted: minor,
      found,
      note: `task '${taskId}' wants Python ${minor}; none was found (found: ${seen}); --allow-python-mismatch: it runs on the sandbox's python3 instead`,
    };
  return {
    kind: "refused",
    wanted: minor,
    found,
    reason: `task '${taskId}' wants Python ${minor}, and no CPython ${minor} was found (looked in: ${PYTHON_PROVIDERS.join(", ")}; found: ${seen})`,
    hint: howToProvide(minor),
  };
}

/** The snapshot-key input of a choice: the interpreter's version and path (a venv links to it). Pure. */
export function pythonKeyOf(choice: PythonChoice | undefined): string | undefined {
  if (!choice) return undefined;
  if (choice.kind === "match") return `${choice.candidate.version} ${choice.candidate.interpreter}`;
  if (choice.kind === "mismatch-allowed") return `mismatch-allowed ${choice.wanted}`;
  return undefined;
}

/** One line saying which interpreter a task runs on, for progress output. Pure. */
export function pythonChoiceLine(choice: PythonChoice): string {
  if (choice.kind === "match")
    return `python ${choice.candidate.version} for wanted ${choice.wanted} (${choice.candidate.provider}: ${choice.candidate.interpreter})`;
  if (choice.kind === "mismatch-allowed")
    return `python: wanted ${choice.wanted} not found; the sandbox's python3 runs it (--allow-python-mismatch)`;
  return `python: ${choice.reason}`;
}
