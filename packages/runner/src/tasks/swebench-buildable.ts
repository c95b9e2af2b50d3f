import type { SwebenchEnvSpec } from "./swebench-env-specs.js";

/**
 * Whether a SWE-bench repository/version's environment can be built by flakegym: its facts
 * install with pip into a venv, except where SWE-bench builds a conda environment from the
 * repository's `environment.yml` (matplotlib 3.5–3.9, xarray: `conda env create` /
 * `conda env update`, which also brings non-Python libraries). Conda's channels are not among
 * the registries flakegym's builds use, and the pins the facts list are only part of that
 * environment, so such a row is refused by name rather than accepted unbuilt. A row with its own
 * `install` column (pip commands that build it) is not asked. Pure.
 */
export function unbuildableReason(repo: string, version: string, spec: SwebenchEnvSpec): string | undefined {
  if (spec.packages?.trim() !== "environment.yml") return undefined;
  const pins = spec.pip_packages?.length
    ? ` (the facts' pip pins, a part of it: ${spec.pip_packages.join(" ")})`
    : "";
  return `${repo} ${version} builds its environment with conda from the repository's environment.yml (SWE-bench's facts); flakegym installs with pip and cannot build it here${pins}: give the row an 'install' column with the pip commands that install its dependencies`;
}
