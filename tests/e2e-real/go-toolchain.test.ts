import { execFileSync, spawnSync } from "node:child_process";
import { lstatSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { describe, expect, it } from "vitest";
import { installGoToolchain } from "../../packages/runner/src/tasks/go-toolchain.js";

const hostGo = spawnSync("go", ["version"]).status === 0;

describe.skipIf(!hostGo)("Go's distribution from the toolchain module, into a tree (real Go proxy)", () => {
  if (!hostGo) console.warn("skipped: no `go` on this machine to fetch golang.org/toolchain with");

  it("installs go1.22.12 at /usr/local/go, runnable, linked into /usr/local/bin", async () => {
    const tree = await mkdtemp(join(tmpdir(), "flakegym-go-tree-"));
    try {
      const arch = execFileSync("dpkg", ["--print-architecture"], { encoding: "utf8" }).trim();
      using deadline = createDeadline({ timeout: { limit: "the go1.22 toolchain download", ms: 300_000 } });
      const mod = await installGoToolchain(tree, "1.22", arch, deadline.signal);
      expect(mod).toMatch(/^golang\.org\/toolchain@v0\.0\.1-go1\.22\.\d+\.linux-/);
      const out = execFileSync(join(tree, "usr/local/go/bin/go"), ["version"], { encoding: "utf8" });
      expect(out).toMatch(/go version go1\.22\.\d+ linux/);
      expect(lstatSync(join(tree, "usr/local/bin/go")).isSymbolicLink()).toBe(true);
      expect(lstatSync(join(tree, "go/bin")).isDirectory()).toBe(true);
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  }, 400_000);
});
