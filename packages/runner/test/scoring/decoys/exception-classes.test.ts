import { describe, expect, it } from "vitest";
import { classBases, decoyClasses, lineage } from "../../../src/scoring/decoys/exception-classes.js";

const SRC = [
  "class ConfigError(Exception):",
  "class ParseError(ConfigError, ValueError):",
  "class StrictParseError(ParseError):",
  "class MissingKeyError(ConfigError, KeyError):",
  "class LimitError(errors.ConfigError):",
  "class Config(object):",
].join("\n    pass\n");
const bases = classBases([SRC], "python");
const all = new Set([
  "ConfigError",
  "ParseError",
  "StrictParseError",
  "MissingKeyError",
  "LimitError",
  "Config",
]);

describe("exception decoy classes", () => {
  it("reads each class's bases (dotted bases by their last name)", () => {
    expect(bases.get("LimitError")).toEqual(["ConfigError"]);
    expect([...lineage("StrictParseError", bases, "python")].sort()).toEqual(
      ["BaseException", "ConfigError", "Exception", "ParseError", "StrictParseError", "ValueError"].sort(),
    );
  });
  it("never an ancestor (a correct answer passes it) nor a descendant (a correct subclass raise passes it)", () => {
    const { own, builtIn } = decoyClasses("ParseError", "python", bases, all);
    expect(own.sort()).toEqual(["LimitError", "MissingKeyError"]);
    expect(builtIn).not.toContain("ValueError");
  });
  it("only classes the test file names, and no class that is not an exception", () => {
    expect(decoyClasses("ParseError", "python", bases, new Set(["LimitError", "Config"])).own).toEqual([
      "LimitError",
    ]);
  });
  it("a class the change adds: no class another derives from, nor a built-in base of the repository's", () => {
    const { own, builtIn } = decoyClasses("InterpolationError", "python", bases, all);
    expect(own.sort()).toEqual(["LimitError", "MissingKeyError", "StrictParseError"]);
    expect(builtIn).not.toContain("ValueError");
    expect(builtIn).toContain("TypeError");
  });
  it("javascript: `class X extends Y`", () => {
    const js = classBases(["export class RangeLimitError extends RangeError {}"], "js");
    expect(decoyClasses("RangeError", "js", js, new Set()).builtIn).not.toContain("RangeError");
    expect([...lineage("RangeLimitError", js, "js")]).toContain("Error");
  });
});
