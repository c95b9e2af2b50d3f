import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  contextWindowFor,
  LIVE_MEMBERS,
  LIVE_SEED,
  LONG_CALL_TOKENS,
  literalRegex,
  memberOfSeed,
  SHORT_CALL_TOKENS,
  shapeOf,
} from "../../conformance/live-script.js";

/**
 * The script of `npm run conformance`'s live Cline rollout (tests/conformance/live-script.ts): which
 * member a call is, and what the server in front of vLLM does with it. Fast: pure functions.
 */
describe("the live conformance group's script", () => {
  it("tells each member by the seed the gateway sends (trajectory i: seed + i), and nothing else", () => {
    for (const [m, i] of Object.entries(LIVE_MEMBERS)) expect(memberOfSeed(LIVE_SEED + i)).toBe(m);
    expect(memberOfSeed(LIVE_SEED + 5)).toBeUndefined();
    expect(memberOfSeed(undefined)).toBeUndefined();
    expect(memberOfSeed(String(LIVE_SEED))).toBeUndefined();
  });

  it("refuses the turn-1 member's first call and any call without this run's seed", () => {
    expect(shapeOf("turn1", 1)).toMatchObject({ kind: "refuse", status: 400 });
    expect(shapeOf(undefined, 1)).toMatchObject({ kind: "refuse", message: /--seed/ });
  });

  it("samples the truncated member's first call long, then scripts its edit and completion", () => {
    expect(shapeOf("truncated", 1)).toEqual({
      kind: "sample",
      body: { min_tokens: LONG_CALL_TOKENS, max_tokens: LONG_CALL_TOKENS },
    });
    const edit = shapeOf("truncated", 2);
    const done = shapeOf("truncated", 3);
    expect(edit).toEqual(shapeOf("one", 1));
    expect(done).toEqual(shapeOf("one", 2));
    expect(JSON.stringify(edit)).toMatch(/<replace_in_file>/);
    expect(JSON.stringify(done)).toMatch(/<attempt_completion>/);
    expect(shapeOf("zero", 3)).toEqual({ kind: "sample", body: { max_tokens: SHORT_CALL_TOKENS } });
  });

  it("puts Cline's truncation threshold (80 % of the window) between the short members' use and the long call's", () => {
    const prompt = 12_000;
    const threshold = 0.8 * contextWindowFor(prompt);
    expect(threshold).toBeGreaterThan(prompt + 3 * SHORT_CALL_TOKENS + 600);
    expect(threshold).toBeLessThan(prompt + LONG_CALL_TOKENS);
  });

  it("spells a regex that matches exactly its text (checked by Python's re)", () => {
    const text = 'a.b*c\n  { op: "<", v: `${x + 1}` } ^$|?()[]\\/-+';
    const ok = execFileSync(
      "python3",
      ["-c", "import re,sys; print(bool(re.fullmatch(sys.argv[1], sys.argv[2])))", literalRegex(text), text],
      { encoding: "utf8" },
    ).trim();
    expect(ok).toBe("True");
    expect(literalRegex("ab 1")).toBe("ab 1");
  });
});
