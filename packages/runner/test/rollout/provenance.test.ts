import { describe, expect, it } from "vitest";
import { nixStorePathOf } from "../../src/rollout/provenance.js";

describe("nixStorePathOf", () => {
  it("reads the store path a flake-built runner lives in, and nothing else", () => {
    expect(
      nixStorePathOf("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-flakegym-0.1.0/lib/flakegym/x.ts"),
    ).toBe("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-flakegym-0.1.0");
    expect(nixStorePathOf("/srv/me/flakegym/packages/runner/src/x.ts")).toBeUndefined();
  });
});
