import type { LogEvent } from "./swebench-log-parsers.js";
import { parseDjangoLine, parseSympyLine } from "./test-runners.js";

/**
 * Django's and SymPy's own runners' logs read as whole logs, in our id spelling, with the shapes
 * SWE-bench's `parse_log_django` / `parse_log_sympy` read (swebench 4.1.0 / 5.0.2). Beyond the
 * one-line shapes of test-runners.ts: a Django test whose own output broke its line reports `ok`
 * at the start of a later line (`test_x (m.C) ... <output>` … `ok`), and `... skipped 'why'` is a
 * skip. A failure header (`FAIL: <id>`) names the whole id here (the harness keeps its first
 * word), so a test reported both ways counts as failed. Pure.
 */

/** One Django runner log → its reports in order. Pure. */
export function djangoLogEvents(log: string): LogEvent[] {
  const out: LogEvent[] = [];
  let pending: string | undefined;
  for (const raw of log.split("\n")) {
    const line = raw.replace(/\r$/, "").trim();
    if (line.includes("--version is equivalent to version"))
      out.push({ id: "--version is equivalent to version", status: "PASSED" });
    const one = parseDjangoLine(line);
    if (one) {
      out.push({ id: one.id, status: one.outcome === "passed" ? "PASSED" : "FAILED" });
      pending = undefined;
      continue;
    }
    const skipped = /^(.+?) \.\.\. skipped\b/.exec(line);
    if (skipped) {
      out.push({ id: skipped[1]!, status: "SKIPPED" });
      pending = undefined;
      continue;
    }
    const open = /^(.+?) \.\.\. /.exec(line);
    if (open) {
      pending = open[1]!;
      continue;
    }
    if (pending !== undefined && line.startsWith("ok")) {
      // the test passed after printing output of its own between `...` and `ok`
      out.push({ id: parseDjangoLine(`${pending} ... ok`)?.id ?? pending, status: "PASSED" });
      pending = undefined;
    }
  }
  return out;
}

/** One SymPy `bin/test --verbose` log → its reports in order. Pure. */
export function sympyLogEvents(log: string): LogEvent[] {
  return log.split("\n").flatMap((raw) => {
    const r = parseSympyLine(raw.replace(/\r$/, ""));
    return r
      ? [{ id: r.id, status: r.outcome === "passed" ? ("PASSED" as const) : ("FAILED" as const) }]
      : [];
  });
}

/** The lines (grep -E) a Django log keeps: results, failure headers, a broken line's start and its `ok`. */
export const DJANGO_LOG_LINES =
  "(\\.\\.\\. |^[[:space:]]*(FAIL|ERROR): |^[[:space:]]*ok|--version is equivalent to version)";
