import { describe, expect, it } from "vitest";
import { loadProfiles, PROFILE_IDS, parseProfiles, profileForLanguage } from "../src/profiles.js";

describe("profiles.json", () => {
  it("parses and defines every profile id", () => {
    const file = loadProfiles();
    expect(Object.keys(file.profiles).sort()).toEqual([...PROFILE_IDS].sort());
    expect(file.fallback).toBe("dev-base");
  });

  it("maps GitHub languages to profiles, case-insensitively, with a fallback", () => {
    expect(profileForLanguage("Rust")).toBe("rust");
    expect(profileForLanguage("typescript")).toBe("node");
    expect(profileForLanguage("C++")).toBe("c");
    expect(profileForLanguage("Python")).toBe("python");
    expect(profileForLanguage("Go")).toBe("go");
    expect(profileForLanguage("Haskell")).toBe("dev-base");
    expect(profileForLanguage("")).toBe("dev-base");
    expect(profileForLanguage(undefined)).toBe("dev-base");
  });

  it("rejects a file missing a profile or mapping a language twice, naming the field", () => {
    const good = loadProfiles();
    const { go: _go, ...noGo } = good.profiles;
    expect(() => parseProfiles({ ...good, profiles: noGo })).toThrow("profiles.json: field 'profiles.go'");
    const dup = structuredClone(good);
    dup.profiles.go.languages.push("rust");
    expect(() => parseProfiles(dup)).toThrow("language 'rust' is also mapped by 'rust'");
  });
});
