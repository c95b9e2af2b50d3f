import { match } from "ts-pattern";
import { z } from "zod";

/**
 * How SWE-bench's harness reads a Python repository's test log into per-test statuses, one parser
 * per repository, written from the facts of the `swebench` package on PyPI (4.1.0 and 5.0.2,
 * `harness/log_parsers/python.py`, `MAP_REPO_TO_PARSER_PY`): which repository uses which reading,
 * which line shapes each reads and how it spells a test id. A row's FAIL_TO_PASS / PASS_TO_PASS
 * ids were recorded through these readings, so a row is graded through the same one
 * (`npm run test:swebench-parity` checks them against the package on generated logs). Pure.
 *
 * - `pytest`: `STATUS <id>` lines of `pytest -rA`; the id is the first word after the status
 *   (an id with a space is cut there, as the recorded ids are).
 * - `pytest-short-paths`: as `pytest`, and a parameter that is an absolute path
 *   (`[/abs/dir/x.py]`) is shortened to its last segment (`[/x.py]`) — requests, pylint, pydicom.
 * - `pytest-spaced`: ANSI colour codes and control characters removed; the id is everything after
 *   the status (a FAILED line up to ` - `), and also a verbose line ending in a status
 *   (`<id> PASSED`) — astropy, scikit-learn, sphinx. The first word alone is reported too, the
 *   cut form older harness releases recorded.
 * - `seaborn`: `FAILED <id>`, `PASSED <id>` and verbose `<id> PASSED …` lines (ERROR lines are not read).
 * - `matplotlib`: as `pytest`, with `MouseButton.LEFT` / `MouseButton.RIGHT` read as `1` / `3`.
 */
export const LogParser = z
  .enum(["pytest", "pytest-short-paths", "pytest-spaced", "seaborn", "matplotlib"])
  .describe(
    "SWE-bench's reading of a pytest log for this repository: pytest (first word after the status), pytest-short-paths (absolute-path parameters shortened to `[/basename]`: requests, pylint, pydicom), pytest-spaced (ids with spaces, colour codes removed: astropy, scikit-learn, sphinx), seaborn, matplotlib (`MouseButton.LEFT` read as 1)",
  );
export type LogParser = z.infer<typeof LogParser>;

/** A status as the harness names it; `XPASS` is read by none of its parsers. */
export type LogStatus = "PASSED" | "FAILED" | "ERROR" | "SKIPPED" | "XFAIL";
const STATUSES: readonly LogStatus[] = ["FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL"];

/** One reported test: its id and status, in log order. */
export interface LogEvent {
  readonly id: string;
  readonly status: LogStatus;
}

/**
 * The pytest-family reading of each Python repository SWE-bench grades with pytest (django and
 * sympy have runners of their own: test-runners.ts). A repository not listed reads as `pytest`.
 */
export const REPO_LOG_PARSERS: Readonly<Record<string, LogParser>> = {
  "astropy/astropy": "pytest-spaced",
  "marshmallow-code/marshmallow": "pytest",
  "matplotlib/matplotlib": "matplotlib",
  "mwaskom/seaborn": "seaborn",
  "pallets/flask": "pytest",
  "psf/requests": "pytest-short-paths",
  "pvlib/pvlib-python": "pytest",
  "pydata/xarray": "pytest",
  "pydicom/pydicom": "pytest-short-paths",
  "pylint-dev/astroid": "pytest",
  "pylint-dev/pylint": "pytest-short-paths",
  "pytest-dev/pytest": "pytest",
  "pyvista/pyvista": "pytest",
  "scikit-learn/scikit-learn": "pytest-spaced",
  "sqlfluff/sqlfluff": "pytest",
  "sphinx-doc/sphinx": "pytest-spaced",
};

/** The reading of a repository's log (`owner/name`, any case, `.git` allowed). Pure. */
export function logParserOf(repo: string): LogParser {
  const want = repo.replace(/\.git$/, "").toLowerCase();
  return REPO_LOG_PARSERS[want] ?? "pytest";
}

const statusAtStart = (line: string): LogStatus | undefined => STATUSES.find((s) => line.startsWith(s));
const statusAtEnd = (line: string): LogStatus | undefined => STATUSES.find((s) => line.endsWith(s));

/** pytest's `SKIPPED [2] path:line: reason` summary names a count, not a test. */
const isSkipCount = (status: LogStatus, word: string) => status === "SKIPPED" && /^\[\d+\]$/.test(word);

/** `STATUS <id> …` → the first word after the status; a FAILED line's ` - ` joins the message. Pure. */
function firstWordEvent(line: string): LogEvent | undefined {
  const status = statusAtStart(line);
  if (status === undefined) return undefined;
  const words = (status === "FAILED" ? line.replaceAll(" - ", " ") : line).split(/\s+/).filter(Boolean);
  const id = words[1];
  // `PASSEDx y` names no status the harness grades: not a report
  if (words[0] !== status || id === undefined || isSkipCount(status, id)) return undefined;
  return { id, status };
}

/** A parameter that is an absolute path keeps only its last segment: `t[/a/b/x.py]` → `t[/x.py]`. Pure. */
export function shortenPathParameter(id: string): string {
  const open = id.indexOf("[");
  const close = id.lastIndexOf("]");
  if (open < 0 || close < open) return id;
  const option = id.slice(open + 1, close);
  if (!option.startsWith("/") || option.startsWith("//") || option.includes("*")) return id;
  return `${id.slice(0, open)}[/${option.split("/").pop()}]`;
}

/** Colour codes (`ESC[1m`, or `[1m` left once ESC is gone) and control characters removed. Pure. */
export function plainText(line: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  return line.replace(/\[(\d+)m/g, "").replace(/[\u0001-\u001f]/g, "");
}

/** `pytest-spaced`: the whole id (and its first word), from the status at either end. Pure. */
function spacedEvents(raw: string): LogEvent[] {
  const line = plainText(raw);
  const start = statusAtStart(line);
  if (start !== undefined) {
    const body = start === "FAILED" ? line.split(" - ")[0]! : line;
    const words = body.split(/\s+/).filter(Boolean);
    if (words.length < 2 || isSkipCount(start, words[1]!)) return [];
    const full = words.slice(1).join(" ");
    return [...new Set([full, words[1]!])].map((id) => ({ id, status: start }));
  }
  const end = statusAtEnd(line);
  if (end === undefined) return [];
  const words = line.split(/\s+/).filter(Boolean);
  if (words.length < 2) return [];
  const full = words.slice(0, -1).join(" ");
  return [...new Set([full, words[0]!])].map((id) => ({ id, status: end }));
}

/** `seaborn`: FAILED and PASSED lines, and the verbose `<id> PASSED …` line. Pure. */
function seabornEvent(line: string): LogEvent | undefined {
  const words = line.split(/\s+/).filter(Boolean);
  if (words.length < 2) return undefined;
  if (line.startsWith("FAILED")) return { id: words[1]!, status: "FAILED" };
  if (line.includes(" PASSED "))
    return words[1] === "PASSED" ? { id: words[0]!, status: "PASSED" } : undefined;
  if (line.startsWith("PASSED")) return { id: words[1]!, status: "PASSED" };
  return undefined;
}

/** The tests one log line reports under a pytest-family reading. Pure. */
export function pytestLineEvents(parser: LogParser, line: string): LogEvent[] {
  const one = (e: LogEvent | undefined) => (e === undefined ? [] : [e]);
  return match(parser)
    .with("pytest", () => one(firstWordEvent(line)))
    .with("pytest-short-paths", () => {
      const e = firstWordEvent(line);
      return e === undefined ? [] : [{ id: shortenPathParameter(e.id), status: e.status }];
    })
    .with("pytest-spaced", () => spacedEvents(line))
    .with("seaborn", () => one(seabornEvent(line)))
    .with("matplotlib", () =>
      one(firstWordEvent(line.replaceAll("MouseButton.LEFT", "1").replaceAll("MouseButton.RIGHT", "3"))),
    )
    .exhaustive();
}

/** Every test a pytest-family log reports, in order. Pure. */
export function pytestLogEvents(parser: LogParser, log: string): LogEvent[] {
  return log.split("\n").flatMap((l) => pytestLineEvents(parser, l.replace(/\r$/, "")));
}

/**
 * The lines (grep -E) the scoring script keeps for a reading: wide enough for every shape the
 * reading reads (the parser then decides), narrow enough that a suite's other output stays out.
 */
export function logParserLines(parser: LogParser): string {
  const start = "^(PASSED|FAILED|ERROR|SKIPPED|XFAIL)";
  return (
    match(parser)
      .with("pytest", "pytest-short-paths", "matplotlib", () => start)
      // a status anywhere: this reading removes colour codes before it looks (`ESC[32mPASSED ESC[0m…`)
      .with("pytest-spaced", () => "(PASSED|FAILED|ERROR|SKIPPED|XFAIL)")
      .with("seaborn", () => "(^(PASSED|FAILED)| PASSED )")
      .exhaustive()
  );
}

/**
 * Reports → each test's outcome as SWE-bench grades a row: PASSED and XFAIL pass, every other
 * status does not; a test reported both ways (a forged line beside the real one) did not pass —
 * stricter than the harness, whose last report wins. Pure.
 */
export function gradedOutcomes(events: readonly LogEvent[]): Map<string, "passed" | "failed"> {
  const out = new Map<string, "passed" | "failed">();
  for (const { id, status } of events) {
    const outcome = status === "PASSED" || status === "XFAIL" ? "passed" : "failed";
    if (out.get(id) !== "failed") out.set(id, outcome);
  }
  return out;
}
