import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir, writeHubDataset } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `--dataset hf:<org>/<name>[@revision][:split]` through the real CLI, over a Hugging Face hub cache
 * in the hub's own layout (blobs, snapshot symlinks, refs; e2e-real's hf-cache test checks the layout
 * with `huggingface_hub`'s own scanner). No `hf` on PATH here: a miss says how to download.
 */
const PARQUET = join(REPO_ROOT, "tests/fixtures/swe-agent-13k-sample.parquet");

let tmp: TempDir;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-hf-");
  const cache = join(tmp.path, "hf", "hub");
  await writeHubDataset(cache, "acme/rows", { "data/train-00000-of-00001.parquet": PARQUET });
  await writeHubDataset(
    cache,
    "acme/split-rows",
    { "data/train-00000-of-00001.parquet": PARQUET, "data/test-00000-of-00001.parquet": PARQUET },
    { revision: "v1" },
  );
  // no `hf` on PATH: a cache miss is never downloaded here
  env = {
    ...process.env,
    HF_HOME: join(tmp.path, "hf"),
    HF_HUB_CACHE: "",
    PATH: `${join(process.execPath, "..")}:/usr/bin:/bin`,
  };
});
afterAll(async () => {
  await tmp?.cleanup();
});

describe("--dataset hf:… reads a Hugging Face dataset from the hub's local cache", () => {
  it("tasks check reads the one split of a cached dataset by name", async () => {
    const r = await runCli(["tasks", "check", "--dataset", "hf:acme/rows"], { env, timeoutMs: 60_000 });
    expect(r.exitCode, r.stderr).toBe(1); // the fixture's one bad row is rejected, as from its path
    expect(r.stdout).toMatch(
      /datasets--acme--rows\/snapshots\/[0-9a-f]{40}\/data\/train-00000-of-00001\.parquet/,
    );
    expect(r.stdout).toMatch(/8 rows, 7 accepted, 1 rejected/);
  });

  it("a revision and a split pick the file; several splits without one are refused, naming them", async () => {
    const ok = await runCli(["tasks", "check", "--dataset", "hf:acme/split-rows@v1:test"], {
      env,
      timeoutMs: 60_000,
    });
    expect(ok.exitCode, ok.stderr).toBe(1);
    expect(ok.stdout).toMatch(/data\/test-00000-of-00001\.parquet/);
    const both = await runCli(["tasks", "check", "--dataset", "hf:acme/split-rows@v1"], {
      env,
      timeoutMs: 60_000,
    });
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toMatch(
      /hf:acme\/split-rows@v1: it has several splits \(test, train\): add :<split>/,
    );
  });

  it("a dataset not in the cache is a usage error naming the cache and the download command", async () => {
    const r = await runCli(["tasks", "check", "--dataset", "hf:princeton-nlp/SWE-bench_Verified"], {
      env,
      timeoutMs: 60_000,
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(
      "revision 'main' of princeton-nlp/SWE-bench_Verified is not in the Hugging Face cache",
    );
    expect(r.stderr).toContain("the hub's CLI `hf` is not on PATH");
    expect(r.stderr).toContain(
      "hf download princeton-nlp/SWE-bench_Verified --repo-type dataset --revision main",
    );
  });
});
