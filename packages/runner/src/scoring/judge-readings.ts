import { type JudgeInput, judgeMessages, parseJudgeScore } from "./judge.js";

/**
 * The judge term from two readings of the change, bounded by what the judge cannot be talked into.
 * The judge is asked on the diff as written (`full`) and on its code reading (`code`,
 * scoring/code-reading.ts: no comments, docstrings, string contents or non-code text); the term is
 * the lower answer, so an instruction that lives only in prose, a string or a data file cannot
 * raise it. Where hidden tests ran, the term is also capped by the tests term: the judge grades how
 * a change that passes was made and never makes up for tests it failed (identifiers and paths can
 * still carry words into the code reading; the cap bounds them wherever tests exist).
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
 * ran (`testsValue`). A reading without a value makes the whole term valueless (left out of the
 * mean, as a failed judge always was): the other reading alone is not the bound. Pure.
 */
export function boundJudge(readings: readonly ReadingAnswer[], testsValue: number | undefined): BoundJudge {
  const failed = readings.find((r) => r.value === undefined);
  if (failed || readings.length === 0)
    return {
      value: null,
      error: `the judge's ${failed?.reading ?? "no"} reading has no score: ${failed?.error ?? "not asked"}`,
    };
  const values = readings.map((r) => r.value!);
  const lowest = Math.min(...values);
  const value = testsValue === undefined ? lowest : Math.min(lowest, testsValue);
  const read = readings
    .map((r) => `${r.reading} reading ${r.value} (${r.via}: ${r.raw?.slice(0, 80)})`)
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
