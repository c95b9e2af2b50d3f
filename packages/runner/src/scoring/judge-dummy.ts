import type { AskJudge, JudgeMessages } from "./judge-readings.js";

/**
 * A judge for tests of the judge's wiring, shipped beside the real one (`askJudge`): it grades the
 * user message (the diff as sent) with `grade` and records every call; `grade` returning a string
 * is an ask that failed with that error.
 */
export function createDummyJudge(
  grade: (userMessage: string, systemMessage: string) => number | string,
): AskJudge & { readonly calls: JudgeMessages[] } {
  const calls: JudgeMessages[] = [];
  const ask: AskJudge = async (messages) => {
    calls.push(messages);
    const system = messages.find((m) => m.role === "system")?.content ?? "";
    const g = grade(messages.find((m) => m.role === "user")?.content ?? "", system);
    return typeof g === "string"
      ? { ok: false, error: g }
      : { ok: true, text: JSON.stringify({ score: g, reason: "dummy" }) };
  };
  return Object.assign(ask, { calls });
}
