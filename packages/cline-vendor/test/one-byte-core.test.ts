import { createHash } from "node:crypto";
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { escapeWideCharacters } from "../src/one-byte-bundle.js";
import {
  buildOneByteCore,
  decideOneByteCore,
  ONE_BYTE_ENV,
  ONE_BYTE_PINS,
  oneByteCoreDir,
  probeOneByteCore,
} from "../src/one-byte-core.js";

const facts = { dir: "/cache/cline-core/x", pinnedOutput: "abc" };

describe("decideOneByteCore", () => {
  it("is on when the rewrite is built with the pinned hash", () => {
    expect(decideOneByteCore({ ...facts, builtHash: "abc" })).toEqual({
      on: true,
      coreJs: "/cache/cline-core/x/cline-core.js",
      dir: "/cache/cline-core/x",
    });
  });
  it("is off, saying why: the caller, the switch, not built, another hash", () => {
    expect(decideOneByteCore({ ...facts, builtHash: "abc", requested: false })).toEqual({
      on: false,
      reason: "turned off by the caller",
    });
    expect(decideOneByteCore({ ...facts, builtHash: "abc", envValue: "0" })).toEqual({
      on: false,
      reason: `turned off by ${ONE_BYTE_ENV}=0`,
    });
    expect(decideOneByteCore(facts)).toMatchObject({
      on: false,
      reason: expect.stringMatching(/not built.*core:one-byte/),
    });
    expect(decideOneByteCore({ ...facts, builtHash: "zzz" })).toMatchObject({
      on: false,
      reason: expect.stringMatching(/sha256 zzz, not the pinned abc; remove/),
    });
    expect(() => decideOneByteCore({ ...facts, envValue: "maybe" })).toThrow(
      /FLAKEGYM_CORE_ONE_BYTE='maybe' is not a switch/,
    );
  });
});

describe("buildOneByteCore (a package of our own, its own pins)", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });
  const sha = (t: string) => createHash("sha256").update(t).digest("hex");

  async function fixture(source: string) {
    const d = await mkdtemp(join(tmpdir(), "one-byte-"));
    dirs.push(d);
    const root = join(d, "cline");
    await mkdir(join(root, "proto"), { recursive: true });
    await writeFile(join(root, "cline-core.js"), source);
    await writeFile(join(root, "proto", "descriptor_set.pb"), "pb");
    return { pkg: { root, coreJs: join(root, "cline-core.js") }, cache: join(d, "cache") };
  }

  it("writes the rewrite beside symlinks to the package, keeps the original, and is done once", async () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source text under test
    const source = "// it’s\nmodule.exports = `→ ${__dirname}`;\n";
    const { pkg, cache } = await fixture(source);
    const pins = { input: sha(source), output: sha(escapeWideCharacters(source).text) };
    const b = await buildOneByteCore(pkg, cache, pins);
    expect(b).toMatchObject({
      built: true,
      dir: oneByteCoreDir(cache, pkg),
      counts: { comment: 1, template: 1 },
    });
    expect(b.stringLiteralsCompared).toBe(0);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source text under test
    expect(await readFile(b.coreJs, "utf8")).toBe("// itu+2019s\nmodule.exports = `\\u2192 ${__dirname}`;\n");
    expect(await readFile(pkg.coreJs, "utf8")).toBe(source);
    expect(await readlink(join(b.dir, "proto"))).toBe(join(pkg.root, "proto"));
    expect((await lstat(b.coreJs)).mode & 0o777).toBe(0o444);
    expect((await buildOneByteCore(pkg, cache, pins)).built).toBe(false);
    // the default pins are cline@1.0.10's: this fixture's rewrite is not that, so probing says so
    expect(probeOneByteCore(pkg, cache, undefined, {})).toMatchObject({
      on: false,
      reason: expect.stringMatching(/not built|not the pinned/),
    });
  });

  it("refuses a bundle whose hash it does not know, naming both hashes", async () => {
    const { pkg, cache } = await fixture("'x’'");
    await expect(buildOneByteCore(pkg, cache)).rejects.toThrow(
      new RegExp(`sha256 ${sha("'x’'")}; the one-byte transform knows only ${ONE_BYTE_PINS.input}`),
    );
  });

  it("refuses a rewrite whose hash is not the pinned one, and one that stays two-byte", async () => {
    const a = await fixture("'x’'");
    await expect(
      buildOneByteCore(a.pkg, a.cache, { input: sha("'x’'"), output: "0".repeat(64) }),
    ).rejects.toThrow(/not the pinned 0{64}/);
    const tagged = "String.raw`’`";
    const b = await fixture(tagged);
    await expect(
      buildOneByteCore(b.pkg, b.cache, { input: sha(tagged), output: "0".repeat(64) }),
    ).rejects.toThrow(/not one-byte: characters in tagged templates \(String.raw\)/);
  });
});
