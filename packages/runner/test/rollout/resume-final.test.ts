import { mkdtemp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProgressEvent } from "../../src/progress/events.js";
import { createDummyDeps } from "../../src/rollout/dummy-deps.js";
import { runRollout } from "../../src/rollout/run-rollout.js";
import { sealBreaks, sealOf } from "../../src/rollout/run-seal.js";
import { type RunConfig, RunManifest } from "../../src/run-format/schema.js";
import { dummyRunConfig } from "../helpers/run-config.js";

/**
 * `--resume` derives what to redo from what was written: a group line is final (a lost member is
 * reported, never rerun, never a second line with its group_id), run.json's inputs are sealed (an
 * edit is refused naming the field), and a cut run.json names its file and what to do.
 */

let tmp: string;
let n = 0;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "fg-resume-final-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const config: RunConfig = dummyRunConfig();

type Trees = Record<string, { digest: string; changed?: readonly string[] }>;

async function run(out: string, resume: boolean, trees: Trees = {}) {
  const deps = createDummyDeps({ tree: (id) => trees[id] });
  const events: ProgressEvent[] = [];
  const r = await runRollout({
    out,
    resume,
    config,
    runId: `run-${n}`,
    deps,
    progress: (e) => events.push(e),
    signal: new AbortController().signal,
  });
  return { ...r, deps, events };
}

const lines = async (file: string) =>
  (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("--resume: a written group is final", () => {
  it("a member dir (or its result.json) deleted after its group was written is reported, not rerun; no duplicate group_id", async () => {
    const out = join(tmp, `run-${++n}`);
    await run(out, false);
    const before = {
      groups: await lines(join(out, "groups.jsonl")),
      metrics: await lines(join(out, "metrics.jsonl")),
      samples: await lines(join(out, "samples.jsonl")),
    };
    await rm(join(out, "trajectories", "a-t0"), { recursive: true });
    await rm(join(out, "trajectories", "b-t1", "result.json"));
    const r = await run(out, true);
    expect(r.deps.agentCalls).toEqual([]);
    const groups = await lines(join(out, "groups.jsonl"));
    expect(groups).toHaveLength(before.groups.length);
    const ids = groups.map((g) => (g.group_overrides as { group_id: string }).group_id);
    expect(new Set(ids).size).toBe(2);
    expect(await lines(join(out, "metrics.jsonl"))).toHaveLength(before.metrics.length);
    expect(await lines(join(out, "samples.jsonl"))).toHaveLength(before.samples.length);
    expect(r.summary.lost).toEqual(["a-t0", "b-t1"]);
    expect(r.summary.complete).toBe(false);
    expect(r.lines.join("\n")).toMatch(/LOST: 2 trajectory dir/);
    const notes = r.events.flatMap((e) => (e.type === "note" ? [e.message] : []));
    expect(notes.filter((m) => m.includes("reported, not run again"))).toHaveLength(2);
  });
});

describe("--resume: a bad metrics or samples line is reported and skipped", () => {
  it("a complete non-JSON line and a line of the wrong shape do not stop --resume; the damaged trajectory's line is written again, nothing twice", async () => {
    const out = join(tmp, `run-${++n}`);
    await run(out, false);
    const metricsFile = join(out, "metrics.jsonl");
    const samplesFile = join(out, "samples.jsonl");
    const metrics = (await readFile(metricsFile, "utf8")).split("\n").filter(Boolean);
    const damaged = (JSON.parse(metrics[0]!) as { trajectory_id: string }).trajectory_id;
    // the first trajectory's metrics line edited into garbage; a foreign line added to samples
    metrics[0] = "garbage{not json";
    await writeFile(metricsFile, `${metrics.join("\n")}\n`);
    await writeFile(samplesFile, `${await readFile(samplesFile, "utf8")}{"trajectory_id":5}\n`);
    const r = await run(out, true);
    expect(r.deps.agentCalls).toEqual([]);
    const notes = r.events.flatMap((e) => (e.type === "note" ? [e.message] : []));
    expect(notes.some((m) => m.includes(`${metricsFile}: line 1 is not JSON`))).toBe(true);
    expect(notes.some((m) => m.includes(`${samplesFile}: line `) && m.includes("skipped"))).toBe(true);
    const good = async (file: string) =>
      (await readFile(file, "utf8"))
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { trajectory_id: unknown })
        .filter((l) => typeof l.trajectory_id === "string")
        .map((l) => l.trajectory_id as string);
    const metricIds = await good(metricsFile);
    expect(metricIds.sort()).toEqual([...new Set(metricIds)].sort());
    expect(metricIds).toContain(damaged);
    expect(metricIds).toHaveLength(metrics.length);
    const sampleIds = await good(samplesFile);
    expect(sampleIds).toHaveLength(new Set(sampleIds).size);
    expect(r.summary.complete).toBe(true);
  });
});

describe("--resume: the snapshot tree a task started from", () => {
  const A = "sha256:aaaa";
  const B = "sha256:bbbb";
  /** A run killed before task a's group and its last trajectory were written. */
  async function killedRun(): Promise<string> {
    const out = join(tmp, `run-${++n}`);
    await run(out, false, { a: { digest: A }, b: { digest: B } });
    const stored = RunManifest.parse(JSON.parse(await readFile(join(out, "run.json"), "utf8")));
    expect(stored.tasks.a?.treeDigest).toBe(A);
    const groups = await lines(join(out, "groups.jsonl"));
    const keep = groups.filter((g) => (g.group_overrides as { task_id: string }).task_id !== "a");
    await writeFile(join(out, "groups.jsonl"), keep.map((g) => `${JSON.stringify(g)}\n`).join(""));
    await rm(join(out, "trajectories", "a-t1"), { recursive: true });
    return out;
  }

  it("an edited tree is refused naming the edited files; nothing of it runs; restored, the task finishes", async () => {
    const out = await killedRun();
    const edited = { digest: A, changed: ["workspace/src/semver.js", "deps/x"] };
    const r = await run(out, true, { a: edited, b: { digest: B } });
    expect(r.deps.agentCalls).toEqual([]);
    const errors = JSON.stringify(r.summary);
    expect(errors).toContain("E_SNAPSHOT_CHANGED");
    expect(errors).toContain("workspace/src/semver.js, deps/x");
    expect(r.summary.complete).toBe(false);
    const after = RunManifest.parse(JSON.parse(await readFile(join(out, "run.json"), "utf8")));
    expect(after.tasks.a?.treeDigest).toBe(A);
    const again = await run(out, true, { a: { digest: A }, b: { digest: B } });
    expect(again.deps.agentCalls).toEqual(["a-t1"]);
    expect(again.summary.complete).toBe(true);
  });

  it("a tree rebuilt with other content (another recorded digest) is refused naming run.json's field", async () => {
    const out = await killedRun();
    const r = await run(out, true, { a: { digest: "sha256:a-rebuilt" }, b: { digest: B } });
    expect(r.deps.agentCalls).toEqual([]);
    const errors = JSON.stringify(r.summary);
    expect(errors).toContain("E_SNAPSHOT_CHANGED");
    expect(errors).toContain("tasks.a.treeDigest");
  });

  it("an unchanged tree resumes: only the lost trajectory runs", async () => {
    const out = await killedRun();
    const r = await run(out, true, { a: { digest: A, changed: [] }, b: { digest: B } });
    expect(r.deps.agentCalls).toEqual(["a-t1"]);
    expect(r.summary.complete).toBe(true);
  });
});

describe("--resume: run.json is sealed", () => {
  it("the seal covers the fields that decide trajectories, not the per-session ones", () => {
    const m = { version: 1, runId: "r", createdAt: "t", config, provenance: {}, tasks: {} } as never;
    const seal = sealOf(m);
    expect(Object.keys(seal)).toContain("config.groupSize");
    expect(Object.keys(seal)).toContain("config.policies");
    expect(Object.keys(seal)).not.toContain("config.concurrency");
    const withSeal = { ...(m as object), seal } as RunManifest;
    expect(sealBreaks(withSeal)).toEqual([]);
    expect(sealBreaks({ ...withSeal, config: { ...config, concurrency: 9 } })).toEqual([]);
    expect(sealBreaks({ ...withSeal, config: { ...config, groupSize: 3 } })).toEqual([
      "changed: config.groupSize",
    ]);
  });

  it.each([
    ["groupSize 2→3", (c: RunConfig) => ({ ...c, groupSize: 3 }), "config.groupSize"],
    ["policy gold→empty", (c: RunConfig) => ({ ...c, policies: ["empty"] }), "config.policies"],
  ])(
    "an edited run.json (%s) is refused naming the field; nothing runs or is appended",
    async (_, edit, field) => {
      const out = join(tmp, `run-${++n}`);
      await run(out, false);
      await rm(join(out, "trajectories", "b-t0"), { recursive: true });
      // the group of b stays unwritten: remove its line so a resume would run it
      const groups = await lines(join(out, "groups.jsonl"));
      await writeFile(
        join(out, "groups.jsonl"),
        groups
          .filter((g) => (g.group_overrides as { task_id: string }).task_id !== "b")
          .map((g) => `${JSON.stringify(g)}\n`)
          .join(""),
      );
      const file = join(out, "run.json");
      const m = RunManifest.parse(JSON.parse(await readFile(file, "utf8")));
      await writeFile(file, JSON.stringify({ ...m, config: edit(m.config) }));
      const groupsBefore = await readFile(join(out, "groups.jsonl"), "utf8");
      const err = await run(out, true).then(
        () => undefined,
        (e: unknown) => e as { code: string; message: string; hint?: string },
      );
      expect(err?.code).toBe("E_RUN_SEALED");
      expect(err?.message).toContain(field);
      expect(err?.message).toContain(file);
      expect(await readFile(join(out, "groups.jsonl"), "utf8")).toBe(groupsBefore);
    },
  );

  it("a truncated run.json names its file, where it was cut and what to do", async () => {
    const out = join(tmp, `run-${++n}`);
    await run(out, false);
    const file = join(out, "run.json");
    await truncate(file, 200);
    const err = await run(out, true).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string; hint?: string },
    );
    expect(err?.code).toBe("E_NOT_JSON");
    expect(err?.message).toMatch(
      /^run\.json is truncated or not JSON: .*run\.json \((position \d+|end of file)/,
    );
    expect(err?.hint).toMatch(/restore it.*or start a new run/);
  });
});
