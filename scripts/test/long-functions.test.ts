import { describe, expect, it } from "vitest";
import { longFunctionsOf } from "../long-functions.js";

const body = (n: number) => Array.from({ length: n }, (_, i) => `  const x${i} = ${i};`).join("\n");

describe("longFunctionsOf", () => {
  it("finds declarations, arrows and methods over the bound, with their first line and name", () => {
    const text = [
      `export function big() {\n${body(5)}\n}`,
      `const arrow = () => {\n${body(5)}\n};`,
      `class K {\n  method() {\n${body(5)}\n  }\n}`,
      "function small() {\n  return 1;\n}",
    ].join("\n");
    const found = longFunctionsOf("f.ts", text, 4);
    expect(found.map((f) => [f.name, f.where, f.lines])).toEqual([
      ["big", "f.ts:1", 7],
      ["arrow", "f.ts:8", 7],
      ["method", "f.ts:16", 7],
    ]);
    expect(found.every((f) => !f.reasoned)).toBe(true);
  });

  it("a comment holding 'long:' right above says why it is long", () => {
    const text = `/** long: one table of cases, read top to bottom */\nfunction table() {\n${body(5)}\n}\n`;
    expect(longFunctionsOf("f.ts", text, 4)).toEqual([
      { lines: 7, where: "f.ts:2", name: "table", reasoned: true },
    ]);
  });
});
