import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import type { ProgressEvent } from "../../src/progress/events.js";
import { createDummyDeps, type DummyDepsOptions } from "../../src/rollout/dummy-deps.js";
import { runRollout } from "../../src/rollout/run-rollout.js";
import type { GroupLine } from "../../src/run-format/schema.js";
import { MetricsLine, type RunConfig, TrajectoryResult } from "../../src/run-format/schema.js";
import { TOKENIZERS, turn } from "../export/fixtures.js";
import { dummyRunConfig } from "../helpers/run-config.js";
import { truncationReplay } from "../helpers/truncation-replay.js";

let tmp: { path: string };
let n = 0;
beforeAll(async () => {
  tmp = { path: await mkdtemp(join(tmpdir(), "fg-run-rollout-")) };
});
afterAll(async () => {
  await rm(tmp.path, { recursive: true, force: true });
});

const config = (over: Partial<RunConfig> = {}): RunConfig =>
  dummyRunConfig({ tasks: ["a"], policies: ["empty"], ...over });

async function run(
  cfg: RunConfig,
  deps: DummyDepsOptions = {},
  o: { out?: string; resume?: boolean; signal?: AbortSignal; onEvent?: (e: ProgressEvent) => void } = {},
) {
  const out = o.out ?? join(tmp.path, `run-${++n}`);
  const d = createDummyDeps(deps);
  const events: ProgressEvent[] = [];
  const r = await runRollout({
    out,
    resume: o.resume ?? false,
    config: cfg,
    runId: `run-${n}`,
    deps: d,
    progress: (e) => {
      events.push(e);
      o.onEvent?.(e);
    },
    signal: o.signal ?? new AbortController().signal,
  });
  return { ...r, out, deps: d, events };
}

async function lines(file: string): Promise<unknown[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

async function resultOf(out: string, id: string): Promise<TrajectoryResult> {
  return TrajectoryResult.parse(
    JSON.parse(await readFile(join(out, "trajectories", id, "result.json"), "utf8")),
  );
}

describe("runRollout (dummy deps)", () => {
  it("retries infra failures only, up to --max-infra-retries, keeping each attempt's files", async () => {
    const r = await run(config({ maxInfraRetries: 2 }), {
      attempt: (slot, i) =>
        slot.index === 0
          ? i < 1
            ? { throws: new Error("worker did not boot") }
            : { outcome: { kind: "completed", detail: "ok" } }
          : { outcome: { kind: "infra_error", detail: `core died (${i})` } },
    });
    expect(r.deps.agentCalls.filter((x) => x === "a-t0")).toHaveLength(2);
    expect(r.deps.agentCalls.filter((x) => x === "a-t1")).toHaveLength(3);
    const t0 = await resultOf(r.out, "a-t0");
    expect(t0).toMatchObject({ outcome: { kind: "completed" }, reward: 1 });
    expect(t0.infraRetries.map((x) => x.detail)).toEqual(["worker did not boot"]);
    const t1 = await resultOf(r.out, "a-t1");
    expect(t1).toMatchObject({ outcome: { kind: "infra_error" }, reward: null });
    expect(t1.outcome.detail).toMatch(/core died \(2\) \(after 3 attempts\)/);
    expect(await readdir(join(r.out, "trajectories", "a-t1", "attempts"))).toEqual(["1", "2"]);
    expect(r.summary.trajectories).toMatchObject({
      infraRetries: 3,
      outcomes: { completed: 1, infra_error: 1 },
    });
  });

  it("a scoring run the machinery lost is retried and recorded like any infra failure", async () => {
    const r = await run(config({ maxInfraRetries: 2 }), {
      scoreThrows: (slot, n) =>
        slot.index === 0 && n === 0 ? new Error("scoring sandbox killed") : undefined,
    });
    expect(r.deps.scoreCalls.filter((x) => x === "a-t0")).toHaveLength(2);
    const t0 = await resultOf(r.out, "a-t0");
    expect(t0).toMatchObject({ outcome: { kind: "completed" }, reward: 1 });
    expect(t0.infraRetries.map((x) => x.detail)).toEqual(["scoring: scoring sandbox killed"]);
    expect(r.deps.agentCalls.filter((x) => x === "a-t0")).toHaveLength(1); // the agent did not run again
  });

  it("never retries a limit, timeout, policy or agent failure; a limit is scored and stays in its group", async () => {
    const ends = [
      { kind: "limits_exceeded", limit: "memory", detail: "the worker hit its memory limit: 512 MiB" },
      { kind: "timeout", limit: "idle", detail: "quiet" },
      { kind: "policy_error", detail: "the model server failed" },
      { kind: "agent_error", detail: "mistake limit" },
    ] as const;
    const r = await run(config({ groupSize: 4, maxInfraRetries: 3 }), {
      attempt: (slot) => ({ outcome: ends[slot.index]!, reward: 0.5 }),
    });
    expect(r.deps.agentCalls.sort()).toEqual(["a-t0", "a-t1", "a-t2", "a-t3"]);
    expect(r.deps.scoreCalls.sort()).toEqual(["a-t0", "a-t1", "a-t2", "a-t3"]);
    expect(r.summary.tasks[0]!.rewards).toEqual([0.5, 0.5, 0.5, 0.5]);
    expect(r.summary.trajectories.limits).toEqual({ memory: 1, idle: 1 });
    expect(r.summary.tasks[0]!.reasons[0]).toEqual({
      trajectoryId: "a-t0",
      index: 0,
      kind: "limits_exceeded",
      limit: "memory",
      detail: "the worker hit its memory limit: 512 MiB",
    });
    const metrics = (await lines(join(r.out, "metrics.jsonl"))).map((l) => MetricsLine.parse(l));
    expect(metrics.find((m) => m.trajectory_id === "a-t0")).toMatchObject({
      outcome: "limits_exceeded",
      limit: "memory",
      outcome_detail: "the worker hit its memory limit: 512 MiB",
      reward: 0.5,
    });
    expect(
      r.events.find((e) => e.type === "trajectory" && e.phase === "done" && e.trajectoryId === "a-t0"),
    ).toMatchObject({
      outcome: "limits_exceeded",
      detail: "memory: the worker hit its memory limit: 512 MiB",
    });
    const group = (await lines(join(r.out, "groups.jsonl")))[0] as { scores: number[] };
    expect(group.scores).toEqual([0.5, 0.5, 0.5, 0.5]);
  });

  it("bad input thrown by the wiring is a task error, not retried", async () => {
    const r = await run(config({ maxInfraRetries: 2 }), {
      attempt: () => ({ throws: new UsageError("policy spec 'x': unknown policy 'x'") }),
    });
    expect(r.deps.agentCalls).toHaveLength(2);
    expect(r.summary.tasks[0]!.error).toMatchObject({ code: "E_USAGE" });
  });

  it("keeps at most --concurrency attempts and scorings running across tasks", async () => {
    const r = await run(config({ tasks: ["a", "b", "c"], groupSize: 3, concurrency: 2 }), {
      attempt: () => ({ outcome: { kind: "completed", detail: "ok" }, ms: 20 }),
    });
    expect(r.deps.agentCalls).toHaveLength(9);
    expect(r.deps.snapshotCalls.map((c) => `${c.taskId}:${c.trajectories}`).sort()).toEqual([
      "a:3",
      "b:3",
      "c:3",
    ]);
    expect(r.deps.maxConcurrent()).toBe(2);
    expect(r.summary.complete).toBe(true);
  });

  it("resume finishes exactly what an interrupted run left, once each; a no-op resume keeps the duration", async () => {
    const out = join(tmp.path, "resumed");
    const stop = new AbortController();
    let finished = 0;
    // t0 and t1 finish at once; t2 and t3 are still running when the run is interrupted
    const first = await run(
      config({ groupSize: 4, concurrency: 4 }),
      {
        attempt: (slot) => ({
          outcome: { kind: "completed", detail: "ok" },
          ms: slot.index < 2 ? 5 : 60_000,
        }),
      },
      {
        out,
        signal: stop.signal,
        // interrupt once two trajectories are done
        onEvent: (e) => {
          if (e.type === "trajectory" && e.phase === "done" && ++finished === 2)
            stop.abort(new Error("Ctrl-C"));
        },
      },
    );
    expect(first.summary.interrupted).toBe(true);
    const done = first.summary.tasks[0]!.reasons.map((x) => x.trajectoryId);
    expect(done).toEqual(["a-t0", "a-t1"]);
    expect((await readdir(join(out, "trajectories"))).sort()).toEqual(["a-t0", "a-t1", "a-t2", "a-t3"]);

    const second = await run(config(), {}, { out, resume: true });
    // the snapshot hears how many trajectories are left (the warm pool boots no more workers)
    expect(second.deps.snapshotCalls).toEqual([{ taskId: "a", trajectories: 4 - done.length }]);
    expect(second.deps.agentCalls.sort()).toEqual(
      ["a-t0", "a-t1", "a-t2", "a-t3"].filter((x) => !done.includes(x)),
    );
    expect(second.summary.complete).toBe(true);
    const metrics = (await lines(join(out, "metrics.jsonl"))) as { trajectory_id: string }[];
    expect(metrics.map((m) => m.trajectory_id).sort()).toEqual(["a-t0", "a-t1", "a-t2", "a-t3"]);
    expect(await lines(join(out, "groups.jsonl"))).toHaveLength(1);

    const stored = second.summary.durationMs;
    await new Promise((r) => setTimeout(r, 30));
    const third = await run(config(), {}, { out, resume: true });
    expect(third.deps.agentCalls).toEqual([]);
    expect(third.deps.snapshotCalls).toEqual([]);
    expect(third.summary.durationMs).toBe(stored);
  });

  it("--out naming a file is a usage error, and nothing is written", async () => {
    const file = join(tmp.path, "a-file");
    await writeFile(file, "x");
    await expect(run(config(), {}, { out: file })).rejects.toBeInstanceOf(UsageError);
    await expect(run(config(), {}, { out: join(file, "sub") })).rejects.toThrow(/is a file/);
    expect(await readFile(file, "utf8")).toBe("x");
    await rm(file);
  });

  it("replay: Cline truncates and resends its prompt; one trajectory whose token export fails leaves the rest of its group written", async () => {
    const real = await loadChatTokenizer(TOKENIZERS.llama3);
    // a tokenizer whose template fails on one trajectory's messages (any export fault would do)
    const tok: ChatTokenizer = {
      ...real,
      apply: (messages, o) => {
        if (JSON.stringify(messages).includes("POISON")) throw new Error("template failed on POISON");
        return real.apply(messages, o);
      },
    };
    const r = await run(config({ groupSize: 3, tokenizer: "/unused" }), {
      tokenizer: tok,
      turnLog: (slot) =>
        slot.index === 2
          ? [
              {
                ...turn(1, [{ role: "user", content: "POISON" }], { text: "x" }),
                trajectoryId: slot.trajectoryId,
              },
            ]
          : truncationReplay(real, slot.trajectoryId),
    });
    expect(r.summary.tasks[0]!.error).toBeUndefined();
    const groups = (await lines(join(r.out, "groups.jsonl"))) as GroupLine[];
    expect(groups).toHaveLength(1);
    const g = groups[0]!;
    expect(g.scores).toEqual([1, 1]);
    expect(g.tokens).toHaveLength(2);
    expect(g.overrides!.map((o) => o["trajectory_id"])).toEqual(["a-t0", "a-t1"]);
    // the final segment of the replay started where Cline resent the same prompt
    expect(g.overrides![0]).toMatchObject({ segment: 2, segments: 3 });
    expect(String(g.overrides![0]!["split"])).toMatch(/^prompt_repeated at call 4/);
    expect(g.group_overrides!["excluded"]).toEqual([
      {
        trajectory_id: "a-t2",
        outcome: "completed",
        detail: "token export failed: template failed on POISON",
        reason: "export_failed",
      },
    ]);
    expect(
      r.events.some(
        (e) => e.type === "note" && /a-t2: token export failed, left out of its group/.test(e.message),
      ),
    ).toBe(true);
  });
});
