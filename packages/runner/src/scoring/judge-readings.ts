import { codeReading, originalsNeeded } from "./code-reading.js";
import { graderAddress } from "./grader-address.js";
import { askJudge, type JudgeConfig, type JudgeInput, judgeMessages, parseJudgeScore } from "./judge.js";
import { knownIn, promptNames } from "./new-names.js";
import type { Term } from "./reward.js";
import type { Score } from "./score.js";

/**
 * The judge term from two readings of the change, bounded by what the judge cannot be talked into.
 * The judge is asked on the diff as written (`full`) and on its code reading (`code`,
 * scoring/code-reading.ts: no comments, docstrings, string contents or non-code text); the term is
 * the lower answer, so an instruction that lives only in prose, a string or a data file cannot
 * raise it. Where hidden tests ran, the term is also capped by the tests term: the judge grades how
 * a change that passes was made and never makes up for tests it failed. Words written as code — names
 * and paths the change introduces — are placeholders in the code reading (scoring/new-names.ts), so
 * with tests passing or no tests at all the code reading alone bounds them.
 */

export type JudgeMessages = ReturnType<typeof judgeMessages>;

/** The one effect: ask the judge. Resolves to its answer text or an error; throws only on abort. */
export type AskJudge = (
  messages: JudgeMessages,
  signal: AbortSignal,
) => Promise<{ readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: string }>;

export type ReadingName = "full" | "code";

/** One reading's answer as recorded: the parsed value, or why there is none. */
export interface ReadingAnswer {
  readonly reading: ReadingName;
  readonly value?: number;
  readonly raw?: string;
  readonly via?: string;
  readonly error?: string;
}

/** An answer (or an ask's error) as a reading's record. Pure. */
export function readingAnswer(
  reading: ReadingName,
  answer: { ok: true; text: string } | { ok: false; error: string },
): ReadingAnswer {
  if (!answer.ok) return { reading, error: answer.error };
  const p = parseJudgeScore(answer.text);
  const raw = answer.text.slice(0, 4000);
  return p.ok ? { reading, value: p.value, raw, via: p.via } : { reading, raw, error: p.error };
}

/** The term's value, detail or error. */
export interface BoundJudge {
  readonly value: number | null;
  readonly detail?: string;
  readonly error?: string;
}

/**
 * The judge term from its readings: the lowest value, capped by the tests term when hidden tests
 * ran (`testsValue`). The last reading (the code reading, when asked) is the bound: without its
 * score the term has no value (left out of the mean, as a failed judge always was); a first
 * reading without a score is passed over — text in the diff that makes the judge answer without a
 * score cannot drop the term out of the mean. Pure.
 */
export function boundJudge(readings: readonly ReadingAnswer[], testsValue: number | undefined): BoundJudge {
  const bound = readings.at(-1);
  if (bound?.value === undefined)
    return {
      value: null,
      error: `the judge's ${bound?.reading ?? "no"} reading has no score: ${bound?.error ?? "not asked"}`,
    };
  const scored = readings.filter((r) => r.value !== undefined);
  const lowest = Math.min(...scored.map((r) => r.value!));
  const value = testsValue === undefined ? lowest : Math.min(lowest, testsValue);
  const read = readings
    .map((r) =>
      r.value === undefined
        ? `${r.reading} reading without a score (${r.error?.slice(0, 80)})`
        : `${r.reading} reading ${r.value} (${r.via}: ${r.raw?.slice(0, 80)})`,
    )
    .join(", ");
  const cap =
    testsValue === undefined
      ? ""
      : `; capped by the tests term ${testsValue}${value < lowest ? " (the cap applied)" : ""}`;
  return { value, detail: `lowest of ${read}${cap} = ${value}` };
}

/** What the two readings are asked with. */
export interface ReadingsInput extends Omit<JudgeInput, "reading" | "diff"> {
  readonly diff: string;
  /** The diff's code reading; absent: only the full reading is asked (the scorer before it, a baseline). */
  readonly codeDiff?: string;
  /** The tests term's value where hidden tests ran; absent: no cap (a dataset row, or a baseline). */
  readonly testsValue?: number;
}

/** What the judge was asked and answered, for `score.json`. */
export interface JudgeRecord {
  readonly term: BoundJudge;
  readonly readings: readonly ReadingAnswer[];
  /** Judge calls made and the characters of every message sent (the cost). */
  readonly calls: number;
  readonly promptChars: number;
}

/** Asks the judge on each reading (at once) and bounds the term. Never throws except on abort. */
export async function judgeReadings(
  ask: AskJudge,
  input: ReadingsInput,
  signal: AbortSignal,
): Promise<JudgeRecord> {
  const asked: { reading: ReadingName; messages: JudgeMessages }[] = [
    { reading: "full", messages: judgeMessages({ ...input, reading: "full" }) },
    ...(input.codeDiff === undefined
      ? []
      : [
          {
            reading: "code" as const,
            messages: judgeMessages({ ...input, diff: input.codeDiff, reading: "code" }),
          },
        ]),
  ];
  const readings = await Promise.all(
    asked.map(async (a) => readingAnswer(a.reading, await ask(a.messages, signal))),
  );
  return {
    term: boundJudge(readings, input.testsValue),
    readings,
    calls: asked.length,
    promptChars: asked.reduce((n, a) => n + a.messages.reduce((m, x) => m + x.content.length, 0), 0),
  };
}

/** What the scorer's judge stage reads of its options (scorer.ts ScoreOptions). */
export interface JudgeStageOptions {
  readonly weights: { readonly judge: number };
  readonly judge?: JudgeConfig;
  readonly taskPrompt: string;
  /**
   * A file's text before the change, from the task's clean snapshot (undefined: absent or not a
   * regular file): the judge's code reading lexes modified files whole. Absent: a modified code
   * file is shown to the code reading as its path and line counts only.
   */
  readonly readOriginal?: (path: string) => Promise<string | undefined>;
  /**
   * The names the task's snapshot has (scoring/snapshot-names.ts): the code reading shows these as
   * written and any other name the change introduces as a placeholder. Absent: only the originals'
   * names, the prompt's and the language's are shown as written.
   */
  readonly snapshotNames?: () => Promise<ReadonlySet<string>>;
  /** The judge term as before its code reading (one reading, no tests cap): the attack suite's baseline. */
  readonly judgeBaseline?: boolean;
}

/** The originals the code reading needs, read from the snapshot (a file that cannot be read is left out). */
async function readOriginals(
  diff: string,
  read: JudgeStageOptions["readOriginal"],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (!read) return out;
  for (const path of originalsNeeded(diff)) {
    const text = await read(path);
    if (text !== undefined) out.set(path, text);
  }
  return out;
}

/** The code reading of `diff` with the snapshot's originals and names (and the prompt's code spans). */
async function codeReadingOf(o: JudgeStageOptions, diff: string): Promise<string> {
  const known = knownIn(promptNames(o.taskPrompt), (await o.snapshotNames?.()) ?? new Set());
  return codeReading(diff, await readOriginals(diff, o.readOriginal), known);
}

/**
 * The judge term: 0 without asking when the change addresses its grader (scoring/grader-address.ts);
 * else the judge's two readings, bounded (judgeReadings above). `testSummary` undefined: no
 * hidden tests ran (a dataset row), so no cap.
 */
export async function judgeTerm(
  o: JudgeStageOptions,
  diff: string,
  testSummary: string | undefined,
  testsValue: number | undefined,
  signal: AbortSignal,
): Promise<{ term: Term; judge?: Score["judge"] }> {
  const weight = o.weights.judge;
  const addressed = graderAddress(diff)[0];
  if (addressed)
    return {
      term: {
        name: "judge",
        weight,
        value: 0,
        detail: `the change addresses its grader (${addressed.file}:${addressed.line}: ${addressed.reason}); the judge was not asked`,
      },
    };
  const cfg = o.judge;
  if (!cfg) return { term: { name: "judge", weight, value: null, error: "no --judge endpoint given" } };
  const r = await judgeReadings(
    (messages, s) => askJudge(cfg, messages, s),
    {
      taskPrompt: o.taskPrompt,
      diff,
      ...(o.judgeBaseline ? {} : { codeDiff: await codeReadingOf(o, diff) }),
      ...(o.judgeBaseline || testSummary === undefined || testsValue === undefined ? {} : { testsValue }),
      testSummary:
        testSummary ?? "no hidden tests (a dataset row): judge the change from the task and the diff",
    },
    signal,
  );
  const full = r.readings.find((x) => x.reading === "full");
  const code = r.readings.find((x) => x.reading === "code");
  const record = (x: typeof full) =>
    x
      ? {
          ...(x.raw !== undefined ? { raw: x.raw } : {}),
          ...(x.via ? { via: x.via } : {}),
          ...(x.error ? { error: x.error } : {}),
        }
      : {};
  return {
    term: {
      name: "judge",
      weight,
      value: r.term.value,
      ...(r.term.detail ? { detail: r.term.detail } : {}),
      ...(r.term.error ? { error: r.term.error } : {}),
    },
    judge: {
      ...record(full),
      ...(code ? { code: record(code) } : {}),
      calls: r.calls,
      promptChars: r.promptChars,
    },
  };
}
