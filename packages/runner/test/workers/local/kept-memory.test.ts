import { describe, expect, it } from "vitest";
import { keptAnonMb, rssAnonKb } from "../../../src/workers/local/kept-memory.js";

describe("kept processes' anonymous memory (the reset's growth rule)", () => {
  it("reads RssAnon from a status text", () => {
    expect(rssAnonKb("Name:\tnode\nRssAnon:\t  123456 kB\nRssFile:\t 9 kB\n")).toBe(123456);
    expect(rssAnonKb("Name:\tkthreadd\n")).toBeUndefined();
  });
  it("sums it over live pids, skipping gone ones; none readable: undefined", async () => {
    const mb = await keptAnonMb([process.pid, 2 ** 22 + 7]);
    expect(mb).toBeGreaterThan(1);
    expect(await keptAnonMb([2 ** 22 + 7])).toBeUndefined();
  });
});
