import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compare, format, parse, satisfies } from "../src/index.js";

describe("parse", () => {
  it("reads major, minor, patch and prerelease", () => {
    assert.deepEqual(parse("v1.2.3-beta.1+build.5"), {
      major: 1,
      minor: 2,
      patch: 3,
      prerelease: ["beta", 1],
    });
  });
  it("rejects leading zeros and garbage", () => {
    assert.throws(() => parse("01.2.3"), /invalid version/);
    assert.throws(() => parse("1.2"), /invalid version/);
  });
  it("formats back", () => {
    assert.equal(format(parse("1.0.0-rc.1")), "1.0.0-rc.1");
  });
});

describe("compare", () => {
  it("orders numerically", () => {
    assert.equal(compare("1.2.3", "1.10.0"), -1);
    assert.equal(compare("2.0.0", "1.99.99"), 1);
    assert.equal(compare("1.0.0", "1.0.0"), 0);
  });
  it("puts prereleases before the release", () => {
    assert.equal(compare("1.0.0-alpha", "1.0.0"), -1);
    assert.equal(compare("1.0.0-alpha.1", "1.0.0-alpha.beta"), -1);
    assert.equal(compare("1.0.0-beta.11", "1.0.0-beta.2"), 1);
  });
});

describe("satisfies", () => {
  it("handles comparator sets and alternatives", () => {
    assert.equal(satisfies("1.5.0", ">=1.0.0 <2.0.0"), true);
    assert.equal(satisfies("2.0.0", ">=1.0.0 <2.0.0"), false);
    assert.equal(satisfies("3.1.0", "1.x || >=3.0.0"), true);
  });
  it("handles tilde ranges", () => {
    assert.equal(satisfies("1.2.9", "~1.2.3"), true);
    assert.equal(satisfies("1.3.0", "~1.2.3"), false);
  });
  it("handles caret ranges on 1.x and above", () => {
    assert.equal(satisfies("1.9.0", "^1.2.3"), true);
    assert.equal(satisfies("2.0.0", "^1.2.3"), false);
    assert.equal(satisfies("1.2.2", "^1.2.3"), false);
  });
  it("excludes prereleases unless the range names one on the same version", () => {
    assert.equal(satisfies("1.3.0-beta", "^1.2.0"), false);
    assert.equal(satisfies("1.2.0-beta.2", ">=1.2.0-beta.1"), true);
  });
  it("treats * as anything", () => {
    assert.equal(satisfies("0.0.1", "*"), true);
  });
});
