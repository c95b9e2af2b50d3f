import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findMirror, REPO_MIRROR_ENV } from "../../packages/runner/src/tasks/repo-mirror.js";
import { sandboxSkipReason } from "../../packages/runner/test/helpers/sandbox.js";
import { registryUnreachable } from "./registries.js";

/**
 * ratatui-2148 for real: upstream ratatui at the task's rev from a local git mirror
 * (FLAKEGYM_REPO_MIRROR=DIR holding DIR/ratatui/ratatui; GitHub itself is not needed), its 515
 * crates from the registry at snapshot build, then `flakegym validate` (gold 1, empty 0, hidden
 * tests guarded by decoys) and a `rollout` with the gold policy, both through the real CLI and the
 * real Cline core. Skips, saying why, without the mirror, the rev in it, or the crates registry.
 * The first snapshot build fetches the crates and compiles ratatui's test targets (~10 min on 2 busy
 * cores); with FLAKEGYM_CACHE set, a snapshot already built there is reused.
 */

const TASK = "ratatui-2148";
const URL = "https://github.com/ratatui/ratatui";
const REV = "527e1df9296e4b6d56dc665788ce558558b480c6";
const mirrorDir = process.env[REPO_MIRROR_ENV];

async function skipReason(tmp: string): Promise<string | undefined> {
  const sandbox = sandboxSkipReason();
  if (sandbox) return sandbox;
  if (!mirrorDir)
    return `${REPO_MIRROR_ENV} is not set (give a directory holding ratatui/ratatui, a git mirror)`;
  const mirror = await findMirror(mirrorDir, URL);
  if (!mirror)
    return `${REPO_MIRROR_ENV}=${mirrorDir} has no ratatui/ratatui (nor ratatui/ratatui.git, ratatui__ratatui, ratatui+ratatui/repo)`;
  const has = await execa("git", ["-C", mirror, "cat-file", "-t", REV], { reject: false, timeout: 30_000 });
  if (has.stdout.trim() !== "commit") return `the mirror ${mirror} lacks rev ${REV}: fetch it there`;
  await execa("cargo", ["new", "--lib", "--quiet", join(tmp, "probe")]);
  await execa("sh", ["-c", `printf 'itoa = "=1.0.15"\\n' >> ${join(tmp, "probe", "Cargo.toml")}`]);
  return await registryUnreachable(
    "the crates registry",
    ["cargo", "generate-lockfile", "--manifest-path", join(tmp, "probe", "Cargo.toml")],
    { CARGO_HOME: join(tmp, "cargo-home") },
  );
}

let tmp: TempDir;
let why: string | undefined;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-ratatui-");
  why = await skipReason(tmp.path);
  if (why) console.warn(`ratatui-2148 e2e skipped: ${why}`);
});
afterAll(async () => {
  await tmp?.cleanup();
});

const env = () => ({
  ...process.env,
  [REPO_MIRROR_ENV]: mirrorDir!,
  // one snapshot cache for both commands, so the rollout reuses what validate built: the caller's
  // (FLAKEGYM_CACHE, to reuse a snapshot built before), else a fresh one
  FLAKEGYM_CACHE: process.env.FLAKEGYM_CACHE ?? join(tmp.path, "cache"),
});

describe("ratatui-2148 with its real repository and crates", () => {
  it("validate: gold 1, empty 0, every graded test guarded by decoys", async (ctx) => {
    if (why) return ctx.skip(why);
    const r = await runCli(
      [
        "validate",
        "--task",
        TASK,
        "--repeat",
        "2",
        "--concurrency",
        "1",
        "--out",
        join(tmp.path, "validate"),
        "--json",
      ],
      { env: env(), timeoutMs: 3_000_000 },
    );
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    const { verdicts } = JSON.parse(r.stdout) as {
      verdicts: { taskId: string; verdict: string; gold: number; empty: number; flaky: string[] }[];
    };
    expect(verdicts).toEqual([
      expect.objectContaining({ taskId: TASK, verdict: "pass", gold: 1, empty: 0, flaky: [] }),
    ]);
  });

  it("rollout with the gold policy scores 1", async (ctx) => {
    if (why) return ctx.skip(why);
    const out = join(tmp.path, "rollout");
    const r = await runCli(
      ["rollout", "--task", TASK, "--policy", "gold", "--group-size", "1", "--out", out],
      { env: env(), timeoutMs: 3_000_000, cwd: REPO_ROOT },
    );
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    const { readFile } = await import("node:fs/promises");
    const lines = (await readFile(join(out, "samples.jsonl"), "utf8")).trim().split("\n");
    expect(lines.map((l) => (JSON.parse(l) as { reward: number }).reward)).toEqual([1]);
  });
});
