import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const script = join(REPO_ROOT, "scripts/ensure-system-deps");
// A PATH without git, bwrap, podman, nix, make, cc, cargo or apt-get.
const bare = { env: { PATH: "/nonexistent", HOME: "/tmp" }, extendEnv: false, reject: false } as const;

describe("scripts/ensure-system-deps", () => {
  it("is idempotent: a run after the test command's own run finds everything present", async () => {
    const r = await execa("sh", [script], { reject: false });
    expect(r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("all system packages present");
  });

  it("rejects an unknown flag naming it and the allowed ones", async () => {
    const r = await execa("sh", [script, "--bogus"], { reject: false });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("unknown flag '--bogus'");
    expect(r.stderr).toContain("--soft");
  });

  it("when packages are missing and apt-get cannot be used, exits 1 printing the exact command", async () => {
    const r = await execa("/bin/sh", [script], bare);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/missing system packages: git bubblewrap podman/);
    expect(r.stderr).toContain("apt-get install -y --no-install-recommends git bubblewrap");
  });

  it("--soft reports the same but never fails", async () => {
    const r = await execa("/bin/sh", [script, "--soft"], bare);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toContain("missing system packages");
  });
});
