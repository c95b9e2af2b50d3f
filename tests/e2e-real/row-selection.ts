/**
 * Which rows of `swebench-real.jsonl` a run of `npm run e2e:real` takes (`FLAKEGYM_E2E_REAL_ROWS`):
 * unset, every row; `families`, one row per repository family, each on the Python its facts want;
 * any other value, a regular expression over instance ids. Pure.
 */

/**
 * One row per repository family: of each family's rows that validate gold 1 / empty 0 here, the
 * quickest (measured 2026-12-07, issue 41's table). astropy's is its only row (setuptools-scm:
 * history and tags); requests-6028 (2.27) needs neither httpbin nor an opaque comparison.
 */
export const FAMILY_ROWS: Readonly<Record<string, string>> = {
  "marshmallow-code/marshmallow": "marshmallow-code__marshmallow-062ed281",
  "dustin/go-humanize": "dustin__go-humanize-402bd47c",
  "Masterminds/semver": "Masterminds__semver-b1bb7619",
  "pytest-dev/pytest": "pytest-dev__pytest-10081",
  "sympy/sympy": "sympy__sympy-24539",
  "sphinx-doc/sphinx": "sphinx-doc__sphinx-8721",
  "mwaskom/seaborn": "mwaskom__seaborn-3187",
  "psf/requests": "psf__requests-6028",
  "pylint-dev/pylint": "pylint-dev__pylint-4970",
  "pallets/flask": "pallets__flask-5014",
  "astropy/astropy": "astropy__astropy-12907",
};

/** The instance-id test `FLAKEGYM_E2E_REAL_ROWS` names, or undefined (every row). Throws naming a bad regex. */
export function rowFilter(value: string | undefined): ((instanceId: string) => boolean) | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  if (value.trim() === "families") {
    const ids = new Set(Object.values(FAMILY_ROWS));
    return (id) => ids.has(id);
  }
  let re: RegExp;
  try {
    re = new RegExp(value);
  } catch (e) {
    throw new Error(
      `FLAKEGYM_E2E_REAL_ROWS=${JSON.stringify(value)} is neither 'families' nor a regular expression (${(e as Error).message}): name instance ids, e.g. 'flask|sympy-24539'`,
    );
  }
  return (id) => re.test(id);
}
