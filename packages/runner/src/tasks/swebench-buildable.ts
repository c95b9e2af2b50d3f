import type { SwebenchEnvSpec } from "./swebench-env-specs.js";

/**
 * Repository versions whose own build downloads sources from a project's web site, not from a
 * registry the snapshot builds reach (PyPI, Debian), as read in the released sdists' `setupext.py`
 * (matplotlib 3.3.4: FreeType unless `system_freetype`; 3.4.3: FreeType and Qhull unless
 * `system_freetype` / `system_qhull`; 3.0.3 and 3.1.3 link the system FreeType and bundle Qhull, so
 * they are not listed). SWE-bench's images had the network for it (its facts even `wget` Qhull
 * before the install). Versions not listed were not read, except where conda refuses them first.
 */
export const SETUP_DOWNLOADS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "matplotlib/matplotlib": {
    "3.3": "FreeType 2.6.1 from its project's download sites",
    "3.4": "FreeType 2.6.1 and Qhull 2020.2 from their projects' download sites",
  },
};

/** What to do about a setup-time download, per repository. */
const SETUP_DOWNLOAD_ADVICE: Readonly<Record<string, string>> = {
  "matplotlib/matplotlib":
    " (matplotlib builds without them when its setup.cfg, or the file $MPLSETUPCFG names, sets system_freetype and system_qhull under [libs], with Debian's libfreetype-dev and libqhull-dev on the host)",
};

/**
 * Whether a SWE-bench repository/version's environment can be built by flakegym: its facts
 * install with pip into a venv, except where SWE-bench builds a conda environment from the
 * repository's `environment.yml` (matplotlib 3.5–3.9, xarray: `conda env create` /
 * `conda env update`, which also brings non-Python libraries), and where the repository's own
 * build downloads sources from outside the registries (SETUP_DOWNLOADS). Conda's channels and
 * those sites are not among the registries flakegym's builds use, and the pins the facts list
 * are only part of a conda environment, so such a row is refused by name rather than accepted
 * unbuilt. A row with its own `install` column (pip commands that build it) is not asked. Pure.
 */
export function unbuildableReason(repo: string, version: string, spec: SwebenchEnvSpec): string | undefined {
  if (spec.packages?.trim() === "environment.yml") return condaReason(repo, version, spec);
  const downloads = SETUP_DOWNLOADS[repo]?.[version];
  if (downloads === undefined) return undefined;
  return `${repo} ${version}'s own build (setup.py) downloads ${downloads}, which are not on a registry flakegym's builds reach (SWE-bench's image had the network); it cannot be built here as the facts say: give the row an 'install' column with pip commands that build it without the download${SETUP_DOWNLOAD_ADVICE[repo] ?? ""}`;
}

function condaReason(repo: string, version: string, spec: SwebenchEnvSpec): string {
  const pins = spec.pip_packages?.length
    ? ` (the facts' pip pins, a part of it: ${spec.pip_packages.join(" ")})`
    : "";
  return `${repo} ${version} builds its environment with conda from the repository's environment.yml (SWE-bench's facts); flakegym installs with pip and cannot build it here${pins}: give the row an 'install' column with the pip commands that install its dependencies`;
}
