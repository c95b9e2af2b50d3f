import { mkdtemp, readFile, rm, truncate, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDummyDeps } from "../../src/rollout/dummy-deps.js";
import { runRollout } from "../../src/rollout/run-rollout.js";
import type { RunConfig } from "../../src/run-format/schema.js";
import { dummyRunConfig } from "../helpers/run-config.js";

/**
 * `--resume` after partial writes other than a lost trajectory dir (resume-final.test.ts): a torn
 * last line of groups.jsonl, a deleted metrics.jsonl or samples.jsonl. What was written derives what
 * is redone: nothing runs again, every line is there once, no group_id twice.
 */

let tmp: string;
let n = 0;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "fg-resume-partial-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const config: RunConfig = dummyRunConfig();

async function run(out: string, resume: boolean) {
  const deps = createDummyDeps({});
  const r = await runRollout({
    out,
    resume,
    config,
    runId: "r",
    deps,
    progress: () => {},
    signal: new AbortController().signal,
  });
  return { ...r, deps };
}

const lines = async (file: string) =>
  (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const idsOf = (rows: Record<string, unknown>[]) => rows.map((r) => String(r.trajectory_id)).sort();
const groupIds = (rows: Record<string, unknown>[]) =>
  rows.map((g) => (g.group_overrides as { group_id: string }).group_id).sort();

describe("--resume after partial writes", () => {
  it.each([
    ["a torn last line of groups.jsonl", "groups.jsonl", "tear"],
    ["a deleted metrics.jsonl", "metrics.jsonl", "delete"],
    ["a deleted samples.jsonl", "samples.jsonl", "delete"],
    ["a torn last line of samples.jsonl", "samples.jsonl", "tear"],
  ] as const)("%s: nothing reruns, each line once, the run complete", async (_what, file, how) => {
    const out = join(tmp, `run-${++n}`);
    await run(out, false);
    const before = {
      groups: await lines(join(out, "groups.jsonl")),
      metrics: await lines(join(out, "metrics.jsonl")),
      samples: await lines(join(out, "samples.jsonl")),
    };
    const f = join(out, file);
    if (how === "delete") await unlink(f);
    else {
      const text = await readFile(f, "utf8");
      await truncate(f, text.length - 5);
    }
    const r = await run(out, true);
    expect(r.deps.agentCalls).toEqual([]);
    const after = {
      groups: await lines(join(out, "groups.jsonl")),
      metrics: await lines(join(out, "metrics.jsonl")),
      samples: await lines(join(out, "samples.jsonl")),
    };
    expect(groupIds(after.groups)).toEqual(groupIds(before.groups));
    expect(idsOf(after.metrics)).toEqual(idsOf(before.metrics));
    expect(idsOf(after.samples)).toEqual(idsOf(before.samples));
    expect(r.summary.complete).toBe(true);
  });
});
