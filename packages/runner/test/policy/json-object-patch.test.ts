import { describe, expect, it } from "vitest";
import { patchJsonObject } from "../../src/policy/json-object-patch.js";

/** A deterministic generator of awkward JSON values: escapes, unicode, nesting, every kind. */
function makeRandom(seed: number) {
  const next = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
    return seed % n;
  };
  const strings = [
    "",
    "plain",
    'q"uote',
    "back\\slash\\",
    'end\\"',
    "ünï ✓ 𝄞",
    "\u2028\n\r\t",
    "{[,:]}",
    '\\"',
    "model",
  ];
  const value = (depth: number): unknown => {
    switch (next(depth > 3 ? 4 : 7)) {
      case 0:
        return strings[next(strings.length)];
      case 1:
        return next(2) ? next(100_000) - 500 : (next(1_000_000) - 500_000) / 997;
      case 2:
        return [true, false, null][next(3)];
      case 3:
        return `${strings[next(strings.length)]}${next(10)}`;
      case 4:
      case 5:
        return Array.from({ length: next(4) }, () => value(depth + 1));
      default:
        return Object.fromEntries(
          Array.from({ length: next(4) }, () => [strings[next(strings.length)]!, value(depth + 1)]),
        );
    }
  };
  return { next, value };
}

/** JSON text of `v` with random whitespace between tokens (JSON.stringify's indent, or none). */
function text(v: unknown, indent: number): string {
  return JSON.stringify(v, null, indent);
}

describe("patchJsonObject", () => {
  it("gives the same object as parse, spread and stringify, for awkward inputs", () => {
    const r = makeRandom(7);
    for (let round = 0; round < 300; round++) {
      const obj: Record<string, unknown> = {};
      for (let k = 0; k < r.next(6); k++)
        obj[["model", "messages", "stream", 'a"b', "x", "mod\u0065l"][r.next(6)]!] = r.value(0);
      const set: Record<string, unknown> = { model: "served", stream: true };
      if (r.next(2)) set["stream_options"] = { include_usage: true };
      if (r.next(3) === 0) set["x"] = undefined;
      const input = Buffer.from(text(obj, [0, 1, 2][r.next(3)]!));
      const out = patchJsonObject(input, set);
      expect(out).toBeDefined();
      expect(JSON.parse(out!.toString())).toEqual(JSON.parse(JSON.stringify({ ...obj, ...set })));
    }
  });

  it("keeps the members it does not set byte for byte, and matches escaped keys by their value", () => {
    const input = Buffer.from('{ "m\\u006fdel" : "old", "messages":[{"content":"a \\"}\\" b"}] ,"n": 1.50 }');
    const out = patchJsonObject(input, { model: "new" })!.toString();
    expect(out).toBe('{"messages":[{"content":"a \\"}\\" b"}],"n": 1.50,"model":"new"}');
  });

  it("declines what is not one JSON object", () => {
    for (const bad of ["[1,2]", '"s"', "", "{", '{"a":1} x', '{"a" 1}', '{"a":}', '{"a":"unterminated}']) {
      expect(patchJsonObject(Buffer.from(bad), { model: "m" })).toBeUndefined();
    }
    expect(patchJsonObject(Buffer.from(" {} "), { model: "m" })!.toString()).toBe('{"model":"m"}');
  });
});
