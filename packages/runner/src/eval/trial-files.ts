import { cp, lstat } from "node:fs/promises";
import { join, relative } from "node:path";
import type { TurnRecord } from "../gateway/turn-log.js";
import type { Score, TrajectoryResult } from "../run-format/schema.js";
import { failureMessage } from "./failure-message.js";

/** What an eval writes per trial besides the rollout's own trajectory files. */

/** Cline's tool names, for counting XML tool calls in assistant text. */
const CLINE_TOOLS = [
  "write_to_file",
  "replace_in_file",
  "read_file",
  "execute_command",
  "list_files",
  "search_files",
  "list_code_definition_names",
  "attempt_completion",
  "ask_followup_question",
  "browser_action",
  "use_mcp_tool",
  "access_mcp_resource",
  "plan_mode_respond",
  "new_task",
  "apply_patch",
  "web_fetch",
];
const XML_TOOL = new RegExp(`<(${CLINE_TOOLS.join("|")})>`, "g");

/** Tool calls the policy made: native calls, or Cline XML tool tags in the text. Pure. */
export function toolCallsOf(turns: readonly TurnRecord[]): number {
  let n = 0;
  for (const t of turns) {
    if (!t.response) continue;
    n += t.response.toolCalls.length || (t.response.text.match(XML_TOOL)?.length ?? 0);
  }
  return n;
}

/** The hidden tests / checks of a score and their merged status. Pure. */
export function checksOf(score: Score | null): Record<string, "passed" | "failed" | "missing"> {
  if (!score?.testResults) return {};
  return { ...score.testResults.failToPass, ...score.testResults.passToPass };
}

/** Each hidden test of a score that did not pass, with why. Pure. */
export function failuresOf(score: Score | null): { test: string; message: string }[] {
  return Object.entries(checksOf(score))
    .filter(([, status]) => status !== "passed")
    .map(([test, status]) => ({
      test,
      message: status === "missing" ? "did not run (missing)" : failureMessage(score?.testOutput?.[test]),
    }));
}

/** `trial-<n>.log`: a human-readable account of one trial. Pure. */
export function trialLog(
  r: TrajectoryResult,
  meta: { item: string; trial: number },
  turns: readonly TurnRecord[],
): string {
  const out: string[] = [];
  out.push(
    `item      ${meta.item}`,
    `policy    ${r.policy}`,
    `trial     ${meta.trial}`,
    `trajectory ${r.trajectoryId}`,
  );
  out.push(
    `outcome   ${r.outcome.kind}${"limit" in r.outcome && r.outcome.limit ? ` (${r.outcome.limit})` : ""}`,
  );
  out.push(`detail    ${r.outcome.detail}`);
  out.push(`reward    ${r.reward ?? "none (infra error)"}`);
  const t = r.timings;
  out.push(
    `timings   fork ${t.forkMs} ms, boot ${t.bootMs} ms, agent ${t.agentMs} ms, score ${t.scoreMs} ms`,
  );
  out.push(
    `counts    ${r.counts.turns} model calls, ${r.counts.tokensIn} tokens in, ${r.counts.tokensOut} out`,
  );
  for (const x of r.infraRetries) out.push(`retry     ${x.attempt}: ${x.detail}`);
  if (r.score) {
    out.push("", "checks / hidden tests:");
    const why = new Map(failuresOf(r.score).map((f) => [f.test, f.message]));
    for (const [name, status] of Object.entries(checksOf(r.score)))
      out.push(`  ${status.padEnd(7)} ${name}${why.has(name) ? `\n          ${why.get(name)}` : ""}`);
    if (r.score.gate) out.push(`gate      ${r.score.gate}`);
    if (r.score.flaky.length) out.push(`flaky     ${r.score.flaky.join(", ")}`);
    if (r.score.tampered?.length) out.push(`tampered  ${r.score.tampered.join(", ")}`);
  }
  out.push("", "model calls:");
  for (const turn of turns) {
    const text = (turn.response?.text ?? "").replace(/\s+/g, " ").trim();
    const calls = turn.response?.toolCalls.map((c) => c.name).join(", ") ?? "";
    out.push(
      `  #${turn.seq} ${turn.status}${turn.error ? ` (${turn.error})` : ""}${calls ? ` tools: ${calls}` : ""} ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`,
    );
  }
  return `${out.join("\n")}\n`;
}

/**
 * Copies an agent's finished workspace for inspection (`--keep-workspaces`): regular files and
 * directories only — no links (a link could point anywhere on the host when browsed), no special
 * files, no `.git` at the root. Returns what was left out.
 */
export async function copyWorkspace(src: string, dest: string): Promise<string[]> {
  const skipped: string[] = [];
  await cp(src, dest, {
    recursive: true,
    errorOnExist: false,
    filter: async (p) => {
      const rel = relative(src, p);
      if (rel === ".git") return false;
      const st = await lstat(p);
      if (st.isDirectory() || st.isFile()) return true;
      skipped.push(rel);
      return false;
    },
  });
  return skipped;
}

/** Names the eval directory itself uses; an item called so gets an `item-` prefix. */
const RESERVED = new Set(["run", "latest", "report.json", "report.html", "summary.md"]);

/** Directory-safe name of an item id (dataset row ids may hold anything). Pure. */
export function itemDirName(id: string): string {
  const s =
    id
      .replace(/[^A-Za-z0-9._-]+/g, "_")
      .replace(/^\.+/, "_")
      .slice(0, 100) || "_";
  return RESERVED.has(s) ? `item-${s}` : s;
}

/** The eval-relative paths of a trial's files. Pure. */
export function trialPaths(item: string, label: string, trial: number) {
  const base = join(itemDirName(item), label);
  return {
    log: join(base, `trial-${trial}.log`),
    dir: join(base, `trial-${trial}`),
    diff: join(base, `trial-${trial}`, "diff.patch"),
    workspace: join(base, `trial-${trial}`, "workspace"),
  };
}
