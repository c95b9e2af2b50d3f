import { describe, expect, it } from "vitest";
import { guardFiles } from "../../../../packages/runner/src/scoring/decoys/guard.js";
import { oracleTellsReal } from "./oracle-pick.js";

// The decoy oracle's "custom exception" rule (oracle-pick.ts) against a test expecting one of the
// repository's own exception classes, where no externalized assertion replaces its decoys. Decoys
// drew six fixed built-ins, so the one copy naming a class that is not a built-in was the real one:
// the oracle told it in every draw. Now a decoy of a repository class names another class of the
// repository the test file binds (decoys/exception-classes.ts). The baseline: the same generator
// without the repository's text (what it knew of classes before), where the rule still wins.

const ERRORS = [
  "class CodecError(Exception):",
  "    pass",
  "class PaddingError(CodecError):",
  "    pass",
  "class AlphabetError(CodecError):",
  "    pass",
  "class LengthError(CodecError):",
  "    pass",
  "class LineError(CodecError):",
  "    pass",
  "",
].join("\n");
const TEST = [
  "import pytest",
  "from b64 import decode",
  "from b64.errors import AlphabetError, LengthError, LineError, PaddingError",
  "",
  "",
  "def test_bad_padding():",
  "    with pytest.raises(PaddingError):",
  '        decode("QQ=")',
  "",
].join("\n");
const ID = "tests/test_b64.py::test_bad_padding";
const DRAWS = 40;

function wins(readable: readonly string[]): { told: number; decoys: string[] } {
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return Math.floor((seed / 2 ** 31) * n);
  };
  let told = 0;
  const decoys = new Set<string>();
  for (let d = 0; d < DRAWS; d++) {
    const g = guardFiles(
      "pytest",
      [{ path: "tests/test_b64.py", content: Buffer.from(TEST) }],
      [ID],
      rand,
      readable,
    );
    const text = g.files[0]!.content.toString();
    for (const m of text.matchAll(/pytest\.raises\((\w+)\)/g)) if (m[1] !== "PaddingError") decoys.add(m[1]!);
    if (oracleTellsReal("pytest", g.files, g.plan, ID, readable.join("\n"))) told++;
  }
  return { told, decoys: [...decoys].sort() };
}

describe("the oracle's custom-exception rule", () => {
  it("wins in the baseline (decoys from built-ins only), in every draw", () => {
    const base = wins([]);
    console.log(`custom-exception oracle, baseline: told the real copy in ${base.told} of ${DRAWS} draws`);
    expect(base.told).toBe(DRAWS);
  });
  it("tells no copy once decoys draw the repository's classes, none an ancestor of the real one", () => {
    const now = wins([ERRORS]);
    console.log(
      `custom-exception oracle, now: ${now.told} of ${DRAWS} draws; decoys ${now.decoys.join(", ")}`,
    );
    expect(now.told).toBe(0);
    // CodecError is PaddingError's base: a correct answer would pass a decoy expecting it
    expect(now.decoys).not.toContain("CodecError");
    expect(now.decoys).toEqual(expect.arrayContaining(["AlphabetError", "LengthError", "LineError"]));
  });
});
