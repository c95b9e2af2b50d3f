import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  contextWindowFor,
  LIVE_MEMBERS,
  LIVE_SEED,
  literalRegex,
  memberOfSeed,
  READS,
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

  it("scripts the truncated member's file reads, then its edit and completion (the reward-1 member's)", () => {
    READS.forEach((path, i) => {
      expect(shapeOf("truncated", i + 1)).toMatchObject({
        body: {
          structured_outputs: { regex: literalRegex(`<read_file>\n<path>${path}</path>\n</read_file>`) },
        },
      });
    });
    const edit = shapeOf("truncated", READS.length + 1);
    const done = shapeOf("truncated", READS.length + 2);
    expect(edit).toEqual(shapeOf("one", 1));
    expect(done).toEqual(shapeOf("one", 2));
    expect(shapeOf("truncated", READS.length + 5)).toEqual(done);
    expect(JSON.stringify(edit)).toMatch(/<replace_in_file>/);
    expect(JSON.stringify(done)).toMatch(/<attempt_completion>/);
    expect(shapeOf("zero", 3)).toEqual({ kind: "sample", body: { max_tokens: SHORT_CALL_TOKENS } });
  });

  it("puts Cline's truncation threshold (80 % of the window) above the short members' use", () => {
    const prompt = 10_800;
    const threshold = 0.8 * contextWindowFor(prompt);
    // three short calls of the reward-0 member, measured: the first prompt + 1 116 tokens
    expect(threshold).toBeGreaterThan(prompt + 1116 + 400);
    expect(threshold).toBeLessThan(prompt + 2000);
  });

  it("spells a regex that matches exactly its text (checked by Python's re)", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a regex metacharacter mix, not a template
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
