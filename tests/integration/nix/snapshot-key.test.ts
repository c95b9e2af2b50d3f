import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { makeTempDir, REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

// nix/snapshot-key.mjs runs inside the Nix build of a snapshot and must compute the key exactly as
// the runner's snapshots do (packages/runner/src/snapshots/key.ts): same fields, same order, the
// toolchain identity as "<cmd>: <first line of stdout>".

const SCRIPT = join(REPO_ROOT, "nix/snapshot-key.mjs");
const RUNNER_KEY = join(REPO_ROOT, "packages/runner/src/snapshots/key.ts");

type KeyFn = (input: Record<string, unknown>) => string;

describe("nix/snapshot-key.mjs", () => {
  it("prints the key and its inputs, with the toolchain identity measured by running the commands", async () => {
    await using tmp = await makeTempDir("flakegym-snapshot-key-");
    const spec = {
      task: "demo",
      format: 1,
      repo: "https://example.invalid/demo.git",
      commit: "0123456789abcdef0123456789abcdef01234567",
      profile: "rust",
      install: ["cargo build"],
      smoke: [],
      network: "none",
      toolchainCommands: ["git --version", "printf 'first\\nsecond\\n'"],
    };
    const specFile = join(tmp.path, "spec.json");
    await writeFile(specFile, JSON.stringify(spec));
    const r = await execa(process.execPath, [SCRIPT, specFile]);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;

    const git = (await execa("sh", ["-c", "git --version"])).stdout.trim().split("\n")[0];
    const toolchain = [`git --version: ${git}`, "printf 'first\\nsecond\\n': first"];
    expect(out["toolchain"]).toEqual(toolchain);
    const inputs = {
      format: 1,
      repo: spec.repo,
      commit: spec.commit,
      profile: "rust",
      install: spec.install,
      smoke: [],
      toolchain,
      network: "none",
    };
    const expected = createHash("sha256").update(JSON.stringify(inputs)).digest("hex");
    expect(out).toEqual({ task: "demo", key: expected, ...inputs });

    if (existsSync(RUNNER_KEY)) {
      const { snapshotKey } = (await import(pathToFileURL(RUNNER_KEY).href)) as { snapshotKey: KeyFn };
      expect(snapshotKey(inputs), "the runner's own snapshotKey agrees").toBe(out["key"]);
    } else {
      console.warn(
        `not compared with the runner's snapshotKey: ${RUNNER_KEY} does not exist in this checkout`,
      );
    }
  });

  it("fails naming a missing spec field", async () => {
    await using tmp = await makeTempDir("flakegym-snapshot-key-");
    const specFile = join(tmp.path, "spec.json");
    await writeFile(specFile, JSON.stringify({ task: "x" }));
    const r = await execa(process.execPath, [SCRIPT, specFile], { reject: false });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`snapshot-key: ${specFile} has no field 'format'`);
  });
});
