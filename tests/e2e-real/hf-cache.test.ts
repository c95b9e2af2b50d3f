import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir, writeHubDataset } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureVenv } from "../conformance/venv.js";

/**
 * The hub cache our `--dataset hf:` tests write is the hub's real layout: `huggingface_hub`'s own
 * cache scanner (PyPI, pinned in hf-requirements.txt) finds the dataset, its revision and its file,
 * and flakegym reads the same cache through `hf:`.
 */
const VENV = process.env.FLAKEGYM_HF_VENV ?? join(tmpdir(), "flakegym-hf", "venv");
const SCAN = `
import json, sys
from huggingface_hub import scan_cache_dir
info = scan_cache_dir(sys.argv[1])
print(json.dumps({
  "warnings": [str(w) for w in info.warnings],
  "repos": [{"id": r.repo_id, "type": r.repo_type, "refs": sorted(x for rev in r.revisions for x in rev.refs),
             "files": sorted(f.file_name for rev in r.revisions for f in rev.files)} for r in info.repos],
}))
`;

let tmp: TempDir;
let python: string | undefined;
let skipReason: string | undefined;

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-hf-real-");
  const venv = ensureVenv({
    venv: VENV,
    requirements: join(REPO_ROOT, "tests/e2e-real/hf-requirements.txt"),
    pythonEnv: "FLAKEGYM_HF_PYTHON",
    log: (line) => console.info(`hf-cache: ${line}`),
  });
  const failed = Object.entries(venv.failed);
  python = venv.python;
  skipReason =
    venv.reason ??
    (failed.length
      ? `huggingface_hub did not install (${failed.map(([k, v]) => `${k}: ${v}`).join("; ")})`
      : undefined);
  if (skipReason) console.warn(`hf-cache: skipped — ${skipReason}`);
}, 1_900_000);
afterAll(async () => {
  await tmp?.cleanup();
});

describe("the hub cache layout, judged by huggingface_hub", () => {
  it("scan_cache_dir sees our dataset, its ref and its file; flakegym reads it by hf:", async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const cache = join(tmp.path, "hub");
    const parquet = join(REPO_ROOT, "tests/fixtures/swe-agent-13k-sample.parquet");
    await writeHubDataset(cache, "acme/rows", { "data/test-00000-of-00001.parquet": parquet });
    const r = await execa(python as string, ["-c", SCAN, cache], { reject: false, timeout: 120_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      warnings: [],
      repos: [{ id: "acme/rows", type: "dataset", refs: ["main"], files: ["test-00000-of-00001.parquet"] }],
    });
    const check = await runCli(["tasks", "check", "--dataset", "hf:acme/rows:test"], {
      env: { ...process.env, HF_HUB_CACHE: cache },
      timeoutMs: 120_000,
    });
    expect(check.stdout).toMatch(/8 rows, 7 accepted, 1 rejected/);
  });
});
