import { describe, expect, it } from "vitest";
import { decideMappedCore, MAPPED_SOURCE_PIN, type MappedCoreFacts } from "../src/mapped-core.js";

const oneByteOn = { on: true, coreJs: "/c/one/cline-core.js", dir: "/c/one" } as const;
const facts = (f: Partial<MappedCoreFacts> = {}): MappedCoreFacts => ({
  oneByte: oneByteOn,
  dir: "/c/mapped",
  builtHash: MAPPED_SOURCE_PIN,
  addonPresent: true,
  ...f,
});

describe("decideMappedCore", () => {
  it("is on when the one-byte bundle is on and the pinned source and the addon are built", () => {
    expect(decideMappedCore(facts())).toEqual({
      on: true,
      dir: "/c/mapped",
      preload: "/c/mapped/core-memory.cjs",
    });
  });

  it("says why it is off: the caller, the switch, the one-byte bundle, the build, the hash", () => {
    const why = (f: Partial<MappedCoreFacts>) => {
      const d = decideMappedCore(facts(f));
      return d.on ? "on" : d.reason;
    };
    expect(why({ requested: false })).toBe("turned off by the caller");
    expect(why({ envValue: "0" })).toBe("turned off by FLAKEGYM_CORE_MAPPED_SOURCE=0");
    expect(why({ requested: true, envValue: "0" })).toBe("on");
    expect(why({ oneByte: { on: false, reason: "not built" } })).toMatch(
      /one-byte bundle, which is off: not built/,
    );
    expect(why({ builtHash: undefined })).toMatch(/not built in \/c\/mapped; run `npm run core:one-byte`/);
    expect(why({ addonPresent: false })).toMatch(/not built in \/c\/mapped/);
    expect(why({ builtHash: "ab" })).toMatch(/has sha256 ab, not the pinned/);
    expect(() => decideMappedCore(facts({ envValue: "maybe" }))).toThrow(
      /FLAKEGYM_CORE_MAPPED_SOURCE='maybe'/,
    );
  });
});
