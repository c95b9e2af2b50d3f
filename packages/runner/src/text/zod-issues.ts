import type { z } from "zod";

/**
 * Zod issues as a reader fixes them: one line per issue, `turns[2].tool_calls[0].name: <message>`.
 * A failed union (a plan turn is text or tool calls) reports the alternative that got furthest
 * into the value — its issues with the deepest path — instead of zod's bare "Invalid input", so
 * the error names the field to fix. Pure.
 */

type Issue = z.core.$ZodIssue;
type Key = PropertyKey;

/** `["turns", 2, "tool_calls", 0, "name"]` → `turns[2].tool_calls[0].name`; `(root)` when empty. */
export function formatIssuePath(path: readonly Key[]): string {
  const text = path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("");
  return text.replace(/^\./, "") || "(root)";
}

const depth = (issues: readonly Issue[]) => Math.max(0, ...issues.map((i) => i.path.length));

/** The issue's leaves: a union's best alternative expanded (paths made absolute), others as they are. */
export function leafIssues(issue: Issue, prefix: readonly Key[] = []): { path: Key[]; message: string }[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === "invalid_union" && issue.errors.length > 0) {
    const best = [...issue.errors].sort((a, b) => depth(b) - depth(a))[0]!;
    if (best.length > 0) return best.flatMap((i) => leafIssues(i, path));
  }
  return [{ path, message: issue.message }];
}

/** The first `max` leaf issues of a zod error as `path: message` lines. */
export function zodIssueLines(err: z.ZodError, max = 5): string[] {
  return err.issues
    .flatMap((i) => leafIssues(i))
    .slice(0, max)
    .map((i) => `${formatIssuePath(i.path)}: ${i.message}`);
}
