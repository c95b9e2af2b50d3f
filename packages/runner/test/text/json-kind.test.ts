import { describe, expect, it } from "vitest";
import { jsonKindOf } from "../../src/text/json-kind.js";

describe("jsonKindOf", () => {
  it("names null and arrays apart from objects", () => {
    expect([null, [1], {}, 4, "x", true].map(jsonKindOf)).toEqual([
      "null",
      "an array",
      "object",
      "number",
      "string",
      "boolean",
    ]);
  });
});
