import { describe, expect, it } from "vitest";
import { AppliedPatchMemo, appliedPatchKey } from "../../src/scoring/applied-patch-memo.js";

const f = (s: string, executable = false) => ({ content: Buffer.from(s), executable });

describe("appliedPatchKey", () => {
  it("is the same for the same patch and bytes, another for any change of patch, path, bytes, exec bit or presence", () => {
    const base = appliedPatchKey("p", [["a.py", f("x")]]);
    expect(appliedPatchKey("p", [["a.py", f("x")]])).toBe(base);
    const others = [
      appliedPatchKey("q", [["a.py", f("x")]]),
      appliedPatchKey("p", [["b.py", f("x")]]),
      appliedPatchKey("p", [["a.py", f("y")]]),
      appliedPatchKey("p", [["a.py", f("x", true)]]),
      appliedPatchKey("p", [["a.py", undefined]]),
      appliedPatchKey("p", [["a.py", f("")]]),
      appliedPatchKey("p", [
        ["a.py", f("x")],
        ["b.py", undefined],
      ]),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });

  it("no two splits of the same text collide (lengths are in the key)", () => {
    expect(appliedPatchKey("pa", [["b", f("c")]])).not.toBe(appliedPatchKey("p", [["ab", f("c")]]));
    expect(appliedPatchKey("p", [["a\nabsent", undefined]])).not.toBe(
      appliedPatchKey("p", [["a", undefined]]),
    );
  });
});

describe("AppliedPatchMemo", () => {
  it("keeps at most `max` entries, the oldest set goes first; null (cannot bind) is remembered too", () => {
    const m = new AppliedPatchMemo(2);
    m.set("a", null);
    m.set("b", []);
    expect(m.get("a")).toBeNull();
    m.set("c", []);
    expect([m.get("a"), m.get("b"), m.get("c"), m.size]).toEqual([undefined, [], [], 2]);
    m.set("b", null); // set again: now the newest
    m.set("d", []);
    expect([m.get("b"), m.get("c"), m.get("d")]).toEqual([null, undefined, []]);
  });
});
