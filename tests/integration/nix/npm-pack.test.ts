import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { createStubFlake, NIX_MISSING_REASON, nixAvailable } from "./stub-flake.js";

// The fixed-output derivation that fetches one npm package by name (nix/npm-pack.nix) must write
// exactly the bytes whose hash the lock records, or every Nix build of the runner fails. Its build
// command comes out of the flake here and runs with this machine's npm against its configured
// registry, as the Nix sandbox would run it (minus the sandbox).

const HAVE_NIX = nixAvailable();
if (!HAVE_NIX) console.warn(NIX_MISSING_REASON);
const KEY = "node_modules/ts-pattern";

describe.skipIf(!HAVE_NIX)("nix/npm-pack.nix build command", () => {
  it("fetches name@version with npm pack and produces the lock's integrity", async () => {
    const flake = await createStubFlake();
    let fod: { spec: string; outputHash: string; buildCommand: string };
    try {
      fod = await flake.evalJson(
        "packages.x86_64-linux.flakegym.nodeModules.fetched",
        `f: { inherit (f."${KEY}".stub.args) spec outputHash buildCommand; }`,
      );
    } finally {
      await flake.cleanup();
    }
    expect(fod.spec).toMatch(/^ts-pattern@\d+\.\d+\.\d+$/);
    await using tmp = await makeTempDir("flakegym-npm-pack-");
    const out = join(tmp.path, "out.tgz");
    const r = await execa("bash", ["-euo", "pipefail", "-c", fod.buildCommand], {
      env: {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        TMPDIR: tmp.path,
        out,
        spec: fod.spec,
        SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt",
      },
      extendEnv: false,
      reject: false,
      timeout: 120_000,
    });
    expect(r.exitCode, `npm pack failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`npm pack ${fod.spec}`);
    const digest = `sha512-${createHash("sha512")
      .update(await readFile(out))
      .digest("base64")}`;
    expect(digest).toBe(fod.outputHash);
  }, 150_000);
});
