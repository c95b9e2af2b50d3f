import { existsSync } from "node:fs";
import { cp, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClineVendorError } from "../src/errors.js";
import { CLINE_INTEGRITY, CLINE_VERSION, hostBinaryName, resolveClinePackage } from "../src/paths.js";
import { makeTempDir } from "./helpers.js";

function codeOf(fn: () => unknown): { code: string; message: string; hint: string | undefined } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ClineVendorError) return { code: err.code, message: err.message, hint: err.hint };
    throw err;
  }
  throw new Error("expected an error");
}

describe("resolveClinePackage", () => {
  it("finds the pinned, complete install", () => {
    const pkg = resolveClinePackage();
    expect(pkg.version).toBe(CLINE_VERSION);
    expect(pkg.version).toBe("1.0.10");
    expect(pkg.integrity).toBe(CLINE_INTEGRITY);
    for (const p of [
      pkg.coreJs,
      pkg.descriptorSet,
      pkg.hostBinary,
      pkg.fakeNodeModules,
      pkg.nodeModules,
      pkg.ripgrep,
    ])
      expect(existsSync(p), p).toBe(true);
    expect(pkg.hostBinary).toMatch(/bin\/cline-host-(linux|darwin)-(amd64|arm64)$/);
  });

  it("names the host binary per platform and refuses unsupported ones", () => {
    expect(hostBinaryName("linux", "x64")).toBe("cline-host-linux-amd64");
    expect(hostBinaryName("darwin", "arm64")).toBe("cline-host-darwin-arm64");
    expect(codeOf(() => hostBinaryName("win32", "x64"))).toMatchObject({
      code: "E_CLINE_UNSUPPORTED_PLATFORM",
      message: expect.stringContaining("win32/x64"),
    });
    expect(codeOf(() => hostBinaryName("linux", "ia32")).code).toBe("E_CLINE_UNSUPPORTED_PLATFORM");
  });

  it("refuses a different version, naming both and how to fix it", async () => {
    await using tmp = await makeTempDir();
    const root = join(tmp.path, "node_modules", "cline");
    await mkdir(root, { recursive: true });
    await writeFile(join(root, "package.json"), JSON.stringify({ name: "cline", version: "2.1.0" }));
    const e = codeOf(() => resolveClinePackage({ root }));
    expect(e.code).toBe("E_CLINE_INSTALL");
    expect(e.message).toContain("version 2.1.0");
    expect(e.message).toContain("pins 1.0.10");
    expect(e.hint).toContain("npm ci");
  });

  it("refuses a tampered install (integrity in npm's hidden lockfile differs)", async () => {
    await using tmp = await makeTempDir();
    const nm = join(tmp.path, "node_modules");
    const root = join(nm, "cline");
    await mkdir(root, { recursive: true });
    await writeFile(join(root, "package.json"), JSON.stringify({ name: "cline", version: "1.0.10" }));
    await writeFile(
      join(nm, ".package-lock.json"),
      JSON.stringify({ packages: { "node_modules/cline": { version: "1.0.10", integrity: "sha512-AAAA" } } }),
    );
    expect(codeOf(() => resolveClinePackage({ root })).message).toContain("integrity sha512-AAAA");
  });

  it("names the missing file of an incomplete install", async () => {
    await using tmp = await makeTempDir();
    const real = resolveClinePackage();
    const root = join(tmp.path, "cline");
    await mkdir(root, { recursive: true });
    await cp(join(real.root, "package.json"), join(root, "package.json"));
    let e = codeOf(() => resolveClinePackage({ root }));
    expect(e).toMatchObject({ code: "E_CLINE_INSTALL", message: expect.stringContaining("cline-core.js") });
    // everything but rg: the hint says how to get it back
    for (const f of [
      "cline-core.js",
      "proto/descriptor_set.pb",
      `bin/${hostBinaryName()}`,
      "fake_node_modules/vscode/x",
    ]) {
      await mkdir(join(root, f, ".."), { recursive: true });
      await writeFile(join(root, f), "");
    }
    e = codeOf(() => resolveClinePackage({ root }));
    expect(e.message).toContain("ripgrep");
    expect(e.hint).toContain("npm rebuild cline");
    await writeFile(join(root, "rg"), "");
    e = codeOf(() => resolveClinePackage({ root }));
    expect(e.message).toContain("better-sqlite3");
    await rm(root, { recursive: true });
    expect(codeOf(() => resolveClinePackage({ root })).message).toContain("no package.json");
  });
});
