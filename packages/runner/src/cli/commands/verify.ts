import { readFile } from "node:fs/promises";
import { z } from "zod";
import { evaluation } from "../../api/evaluation.js";
import { absoluteLlm } from "../../api/llm.js";
import { rollout } from "../../api/rollout.js";
import { failedSessionDirOf, setup } from "../../api/setup.js";
import { teardown } from "../../api/teardown.js";
import { describeError } from "../../errors.js";
import { defineCommand } from "../command.js";

/** One target's line in the verify report. */
export interface VerifyLine {
  readonly target: string;
  readonly ok: boolean;
  readonly contract?: string;
  readonly rollout?: string;
  readonly samples?: number;
  readonly evaluation?: string;
  readonly score?: number | null;
  /** Why the evaluation has no score, or what it is. */
  readonly reason?: string;
  /** The whole error (every line of it). */
  readonly error?: string;
  /** A failed target's session directory, kept with its logs (not torn down). */
  readonly logs?: string;
  /** A stage that did not complete: its outcome's detail and the last lines its program wrote to stderr. */
  readonly stages?: readonly string[];
}

/** How many of a failed stage's last stderr lines the report carries. */
export const STAGE_TAIL_LINES = 12;

/** The last `n` non-blank lines of a stage log's stderr part (pure; the whole log when it has none). */
export function stageLogTail(log: string, n = STAGE_TAIL_LINES): string[] {
  const at = log.lastIndexOf("--- stderr ---");
  const part = at >= 0 ? log.slice(at + "--- stderr ---".length) : log;
  return part
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(-n);
}

/** What the report says of a stage that did not complete (its outcome's detail, its stderr's tail). */
async function stageWhy(
  stage: string,
  outcome: { readonly kind: string; readonly detail?: string },
  log: string,
): Promise<string[]> {
  if (outcome.kind === "completed") return [];
  const text = await readFile(log, "utf8").catch(
    (e: Error) => `(its log ${log} could not be read: ${e.message})`,
  );
  return [
    `${stage} ${outcome.kind}: ${outcome.detail ?? "no detail"}; its stderr ends:`,
    ...stageLogTail(text).map((l) => `  ${l}`),
  ];
}

/** The report's text (pure): one line per target (a failure's whole error indented under it) and the totals. */
export function renderVerify(lines: readonly VerifyLine[]): string {
  const indent = (text: string) =>
    text
      .split("\n")
      .map((x) => `      ${x}`)
      .join("\n");
  const rows = lines.map((l) =>
    l.ok
      ? `ok    ${l.target}: ${l.contract} contract, rollout ${l.rollout} (${l.samples} samples), evaluation ${l.evaluation}, score ${l.score ?? "none"}`
      : [
          `FAIL  ${l.target}: ${l.error ? l.error.split("\n")[0] : `rollout ${l.rollout}, evaluation ${l.evaluation}${l.reason ? ` (${l.reason})` : ""}`}`,
          ...(l.error?.includes("\n") ? [indent(l.error.split("\n").slice(1).join("\n"))] : []),
          ...(l.stages?.length ? [indent(l.stages.join("\n"))] : []),
          ...(l.logs ? [`      logs: ${l.logs}`] : []),
        ].join("\n"),
  );
  const passed = lines.filter((l) => l.ok).length;
  return `${rows.join("\n")}\n${passed}/${lines.length} targets passed\n`;
}

export const verifyCommand = defineCommand({
  path: ["verify"],
  summary: "run setup → rollout → evaluation → teardown over several targets, one report",
  options: z.object({
    target: z
      .array(z.string())
      .min(1)
      .describe("a target (repeat): repository dir, git URL, owner/repo, .jsonl or task id"),
    llm: z
      .string()
      .default("empty")
      .describe("policy for the rollouts, and for scaffolding missing contracts with Cline (default empty)"),
    scaffold: z.boolean().default(true).describe("--no-scaffold: generic contracts for targets without one"),
    sessionsDir: z.string().optional().describe("where sessions live during the run"),
    json: z.boolean().default(false).describe("print the report as JSON"),
  }),
  examples: ["flakegym verify --target ./repo-a --target rows.jsonl --llm scripted:plan.json"],
  async run(opts, ctx) {
    const common = { signal: ctx.signal, ...(opts.sessionsDir ? { sessionsDir: opts.sessionsDir } : {}) };
    const llm = absoluteLlm(opts.llm, ctx.cwd);
    const lines: VerifyLine[] = [];
    for (const target of opts.target) {
      let id: string | undefined;
      let dir: string | undefined;
      let ok = false;
      try {
        const s = await setup(target, {
          ...common,
          cwd: ctx.cwd,
          noScaffold: !opts.scaffold,
          llm,
          keepFailed: true,
        });
        id = s.id;
        dir = s.dir;
        const r = await rollout(llm, { ...common, session: s.id });
        const e = await evaluation({ ...common, session: s.id });
        ok = r.ok && e.ok;
        const stages = ok
          ? []
          : [
              ...(await stageWhy("rollout", r.outcome, r.paths.log)),
              ...(await stageWhy("evaluation", e.outcome, e.paths.log)),
            ];
        lines.push({
          target,
          ok,
          contract: s.contractSource,
          rollout: r.outcome.kind,
          samples: r.samples.length,
          evaluation: e.outcome.kind,
          score: e.score,
          reason: e.reason,
          ...(stages.length ? { stages } : {}),
          ...(ok ? {} : { logs: s.dir }),
        });
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        const logs = failedSessionDirOf(err) ?? dir;
        lines.push({ target, ok: false, error: describeError(err), ...(logs ? { logs } : {}) });
      } finally {
        // a failed target keeps its session and logs (named in the report); a passing one is removed
        if (id && ok) await teardown({ ...common, session: id });
      }
    }
    ctx.stdout.write(opts.json ? `${JSON.stringify(lines, null, 2)}\n` : renderVerify(lines));
    return lines.every((l) => l.ok) ? 0 : 1;
  },
});
