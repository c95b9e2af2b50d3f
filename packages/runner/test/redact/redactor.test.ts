import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createRedactor, GATEWAY_TOKEN_PATTERN, REDACTED, secretForms } from "../../src/redact/redactor.js";
import { redactTree } from "../../src/run-format/redact-tree.js";

const KEY = 'sk-test/Key+9"q\\Zm=';
const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("secretForms", () => {
  it("spells the secret raw, JSON-escaped, URL-encoded and base64 (of the key, Bearer, Basic)", () => {
    const forms = secretForms(KEY);
    expect(forms).toContain(KEY);
    expect(forms).toContain(JSON.stringify(KEY).slice(1, -1));
    expect(forms).toContain(encodeURIComponent(KEY));
    expect(forms).toContain(b64(KEY).replace(/=+$/, ""));
    expect(forms).toContain(b64(`Bearer ${KEY}`).replace(/=+$/, ""));
    expect(forms).toContain(Buffer.from(`${KEY}:`).toString("base64url"));
    for (let i = 1; i < forms.length; i++)
      expect(forms[i - 1]!.length).toBeGreaterThanOrEqual(forms[i]!.length);
  });
  it("treats short values as no secret", () => {
    expect(secretForms("abc1234")).toEqual([]);
  });
});

describe("createRedactor", () => {
  const r = createRedactor({ secrets: [KEY], patterns: [GATEWAY_TOKEN_PATTERN] });

  it("redacts every form, in text and inside JSON, and keeps JSON valid", () => {
    const value = {
      error: `invalid key ${KEY}`,
      url: `https://x/?k=${encodeURIComponent(KEY)}`,
      header: `Authorization: Basic ${b64(`${KEY}:`)}`,
      echoed: b64(`Bearer ${KEY}`),
    };
    const out = r.text(JSON.stringify(value));
    const back = JSON.parse(out) as typeof value;
    expect(back.error).toBe(`invalid key ${REDACTED}`);
    expect(back.url).toBe(`https://x/?k=${REDACTED}`);
    expect(back.header).toBe(`Authorization: Basic ${REDACTED}`);
    expect(back.echoed.startsWith(REDACTED)).toBe(true);
    expect(r.finds(out)).toBe(false);
    expect(out).not.toContain("sk-test");
  });

  it("redacts bytes that are not UTF-8 and returns the same buffer when nothing matched", () => {
    const raw = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00]), Buffer.from(KEY), Buffer.from([0xc3])]);
    const out = Buffer.from(r.bytes(raw));
    expect(out.includes(Buffer.from(KEY))).toBe(false);
    expect(out.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xfe, 0x00]));
    expect(out.subarray(3).toString("latin1")).toBe(`${REDACTED}\u00c3`);
    const clean = Buffer.from("nothing here");
    expect(r.bytes(clean)).toBe(clean);
  });

  it("redacts gateway tokens by pattern, and keys added later", () => {
    const token = `fg-${"A".repeat(16)}_-${"b".repeat(14)}`;
    expect(r.text(`key ${token}.`)).toBe(`key ${REDACTED}.`);
    const size = r.size;
    r.add(token); // covered by the pattern: not held
    expect(r.size).toBe(size);
    const later = createRedactor();
    expect(later.text("later-secret-1")).toBe("later-secret-1");
    later.add("later-secret-1");
    later.add(undefined);
    later.add("short");
    expect(later.size).toBe(1);
    expect(later.text("a later-secret-1 b")).toBe(`a ${REDACTED} b`);
  });
});

describe("redactTree", () => {
  it("rewrites the files that hold a secret, leaves others and never follows links", async () => {
    const dir = join(tmpdir(), `flakegym-redact-${process.pid}-${Date.now()}`);
    await mkdir(join(dir, "sub"), { recursive: true });
    const outside = join(dir, "..", `flakegym-redact-outside-${process.pid}-${Date.now()}`);
    await writeFile(outside, `outside ${KEY}`);
    await writeFile(join(dir, "a.json"), JSON.stringify({ detail: KEY }));
    await writeFile(join(dir, "sub", "b.txt"), "clean");
    await symlink(outside, join(dir, "link"));
    const r = createRedactor({ secrets: [KEY] });
    expect(await redactTree(dir, r)).toEqual(["a.json"]);
    expect(await readFile(join(dir, "a.json"), "utf8")).toBe(`{"detail":"${REDACTED}"}`);
    expect(await readFile(join(dir, "sub", "b.txt"), "utf8")).toBe("clean");
    expect(await readFile(outside, "utf8")).toBe(`outside ${KEY}`);
  });
});
