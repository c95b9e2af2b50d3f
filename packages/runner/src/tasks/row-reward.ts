import type { ProfileId } from "@flakegym/profiles";
import type { TaskProfile } from "./task-profile.js";

/**
 * What a dataset row without hidden tests (swe-agent-13k) is scored by: the build, lint and judge
 * terms. Without flags a row gets its profile's default build and lint commands (below), run in
 * the scoring sandbox on the agent's diff; `--build-cmd` / `--lint-cmd` replace them for every
 * row, `--judge` adds the LLM judge. Pure.
 */

/** The files the default python build (`compileall -x <this>`) leaves out. */
export const PYTHON_BUILD_EXCLUDE = "(^|/)(\\.git|\\.venv|node_modules)/";

/** The JavaScript files the default node check (`node --check`, no tsconfig.json) visits: `find` without its action. */
export const NODE_CHECKED_FIND =
  "find . -name node_modules -prune -o -type f \\( -name '*.js' -o -name '*.mjs' -o -name '*.cjs' \\)";

/**
 * Each profile's default commands: the toolchain's own compile and static check, offline, over
 * the whole repository. A profile without a command here has no such term by default (the python
 * profile ships no linter; dev-base no toolchain).
 */
export const ROW_TERM_DEFAULTS: Readonly<
  Record<ProfileId, { readonly build?: string; readonly lint?: string }>
> = {
  python: { build: `python3 -m compileall -q -x '${PYTHON_BUILD_EXCLUDE}' .` },
  rust: { build: "cargo build --offline --quiet", lint: "cargo clippy --offline --quiet" },
  go: { build: "go build ./...", lint: "go vet ./..." },
  node: {
    build: `if [ -f tsconfig.json ]; then npx --no-install tsc --noEmit; else ${NODE_CHECKED_FIND} -print0 | xargs -0 -r -n1 node --check; fi`,
  },
  c: {
    build:
      "if [ -f Makefile ] || [ -f makefile ]; then make -j2; elif [ -f CMakeLists.txt ]; then cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug && cmake --build build -j2; else exit 1; fi",
  },
  "dev-base": {},
};

/** The flags that choose a row's terms. */
export interface RowTermFlags {
  readonly buildCmd?: string | undefined;
  readonly lintCmd?: string | undefined;
  /** Whether `--judge` is given. */
  readonly judge?: boolean | undefined;
}

/** One term a row is scored by, and where its command comes from. */
export interface RowTerm {
  readonly name: "build" | "lint" | "judge";
  readonly command?: string;
  readonly from: string;
}

/** The terms a row of `profile` is scored by under `flags`, in order build, lint, judge. Pure. */
export function rowRewardTerms(profile: ProfileId, flags: RowTermFlags): RowTerm[] {
  const d = ROW_TERM_DEFAULTS[profile];
  const out: RowTerm[] = [];
  for (const [name, flag, def, option] of [
    ["build", flags.buildCmd, d.build, "--build-cmd"],
    ["lint", flags.lintCmd, d.lint, "--lint-cmd"],
  ] as const) {
    if (flag !== undefined) out.push({ name, command: flag, from: option });
    else if (def !== undefined) out.push({ name, command: def, from: `default for ${profile}` });
  }
  if (flags.judge) out.push({ name: "judge", from: "--judge" });
  return out;
}

/** The build and lint commands a row's scoring runs (flags first, else its profile's defaults). Pure. */
export function rowTermCommands(
  profile: ProfileId,
  flags: RowTermFlags,
): { buildCmd?: string; lintCmd?: string } {
  const terms = rowRewardTerms(profile, flags);
  const cmd = (n: "build" | "lint") => terms.find((t) => t.name === n)?.command;
  const build = cmd("build");
  const lint = cmd("lint");
  return {
    ...(build === undefined ? {} : { buildCmd: build }),
    ...(lint === undefined ? {} : { lintCmd: lint }),
  };
}

/**
 * The profile whose default build a row's build command is (its build then lists the files it
 * compiled, scoring/build-reach.ts); undefined when `--build-cmd` replaced it. Pure.
 */
export function rowReachProfile(profile: ProfileId, flags: RowTermFlags): ProfileId | undefined {
  return flags.buildCmd === undefined && ROW_TERM_DEFAULTS[profile].build !== undefined ? profile : undefined;
}

/** One line of the row-level report: what the row will be scored by, or why nothing. Pure. */
export function formatRowReward(profile: ProfileId, terms: readonly RowTerm[]): string {
  if (terms.length === 0) {
    return `nothing: the ${profile} profile has no default build or lint command; pass --build-cmd, --lint-cmd or --judge`;
  }
  return terms
    .map((t) =>
      t.command === undefined ? `${t.name} (${t.from})` : `${t.name} \`${t.command}\` (${t.from})`,
    )
    .join(", ");
}

/** What one row will be scored by (the row-level report of `tasks check`). */
export interface RowRewardLine {
  readonly row: number;
  readonly id: string;
  readonly profile: ProfileId;
  readonly terms: readonly RowTerm[];
  readonly text: string;
}

/** The row-level report: each accepted row and the terms it will be scored by under `flags`. Pure. */
export function rowRewardReport(rows: readonly TaskProfile[], flags: RowTermFlags): RowRewardLine[] {
  return rows.map((r) => {
    const terms = rowRewardTerms(r.profile, flags);
    return {
      row: r.source.row,
      id: r.id,
      profile: r.profile,
      terms,
      text: formatRowReward(r.profile, terms),
    };
  });
}
