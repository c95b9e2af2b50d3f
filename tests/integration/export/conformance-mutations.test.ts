import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MUTATIONS, patched } from "../../conformance/mutation-list.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const read = (f: string) => readFileSync(`${ROOT}${f}`, "utf8");

/**
 * `npm run conformance:mutations` puts each of issue 44's faults back by patching the sources; the
 * patches must still apply to today's sources (else the suite would stop proving anything). Fast:
 * reads files, runs nothing.
 */
describe("conformance mutations", () => {
  it("cover issue 44's items 1 to 6 (item 1 twice: silent drops, and `final` as the default), each with checks to judge it", () => {
    expect(MUTATIONS.map((m) => m.item)).toEqual([1, 1, 2, 3, 4, 5, 6]);
    for (const m of MUTATIONS) expect(m.checks.length).toBeGreaterThan(0);
  });

  it.each(MUTATIONS.map((m) => [`${m.item} (${m.fault})`, m] as const))(
    "mutation %s applies once per edit and changes the source",
    (_, m) => {
      const out = patched(m, read);
      for (const [file, text] of out) expect(text).not.toBe(read(file));
    },
  );

  it("refuses a patch whose text is gone, naming the file and what to update", () => {
    const gone = { ...MUTATIONS[0]!, edits: [{ file: "package.json", from: "no such text ¤", to: "" }] };
    expect(() => patched(gone, read)).toThrow(/occurs 0 times in package\.json .*mutation-list\.ts/);
  });
});
