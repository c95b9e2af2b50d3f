import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportOutProblem, exportRun } from "../../src/export/formats/export-run.js";
import { readResults } from "../../src/export/served-record.js";
import { createDummyDeps } from "../../src/rollout/dummy-deps.js";
import { runRollout } from "../../src/rollout/run-rollout.js";
import { jsonlLinesOf } from "../../src/run-format/jsonl-lines.js";
import type { RunConfig } from "../../src/run-format/schema.js";
import { dummyRunConfig } from "../helpers/run-config.js";

/**
 * `export` of a run a kill or an edit left with a partial file: a torn last line of groups.jsonl /
 * samples.jsonl, an edited line, a cut result.json. One bad line or file is named and skipped; the
 * rest is exported; what is written is whole JSONL (never a torn line passed on to a trainer).
 */

let tmp: string;
let n = 0;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "fg-export-partial-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const config: RunConfig = dummyRunConfig();

async function finishedRun(): Promise<string> {
  const out = join(tmp, `run-${++n}`);
  await runRollout({
    out,
    resume: false,
    config,
    runId: `run-${n}`,
    deps: createDummyDeps({}),
    progress: () => {},
    signal: new AbortController().signal,
  });
  return out;
}

/** Cuts the file's last line in half (its newline too): what a kill mid-append leaves. */
async function tearLastLine(file: string): Promise<void> {
  const text = await readFile(file, "utf8");
  const start = text.lastIndexOf("\n", text.length - 2) + 1;
  await truncate(file, start + Math.floor((text.length - start) / 2));
}

const jsonLines = async (file: string) =>
  (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("jsonlLinesOf", () => {
  it("keeps whole JSON lines, names a torn last line and an edited one by file and line", () => {
    const r = jsonlLinesOf('{"a":1}\n\nnot json\n{"b":2}\n{"c":', "/r/groups.jsonl", "resume it");
    expect(r.lines).toEqual(['{"a":1}', '{"b":2}']);
    expect(r.skipped.map((s) => s.line)).toEqual([3, 5]);
    expect(r.skipped[0]!.why).toMatch(/^\/r\/groups\.jsonl: line 3 is not JSON/);
    expect(r.skipped[1]!.why).toMatch(/^\/r\/groups\.jsonl: line 5 is torn .*resume it$/);
    expect(jsonlLinesOf("", "f", "x")).toEqual({ lines: [], skipped: [] });
  });
});

describe("export of a run left with partial files", () => {
  it("a torn last line of groups.jsonl and samples.jsonl: the whole lines are exported, the torn one named, never copied", async () => {
    const run = await finishedRun();
    const before = await jsonLines(join(run, "groups.jsonl"));
    await tearLastLine(join(run, "groups.jsonl"));
    await tearLastLine(join(run, "samples.jsonl"));
    for (const [format, file] of [
      ["atropos", "groups.jsonl"],
      ["samples", "samples.jsonl"],
    ] as const) {
      const out = join(run, "exports", `${format}.jsonl`);
      const r = await exportRun({ runDir: run, format, out, segments: "split" });
      // every line of what was written parses (a trainer never meets the torn line)
      const written = await jsonLines(out);
      expect(written.length).toBe(r.records);
      expect(r.excluded).toHaveLength(1);
      expect(r.excluded[0]!.reason).toContain(join(run, file));
      expect(r.excluded[0]!.reason).toMatch(/is torn.*--resume/);
      if (format === "atropos") expect(written).toEqual(before.slice(0, -1));
    }
    // parquet too: no bare parser error
    const pq = await exportRun({
      runDir: run,
      format: "samples",
      out: join(run, "exports", "samples.parquet"),
      segments: "split",
      fileFormat: "parquet",
    });
    expect(pq.excluded).toHaveLength(1);
    expect((await stat(join(run, "exports", "samples.parquet"))).size).toBeGreaterThan(0);
  });

  it("an edited (complete, not JSON) line is skipped and named; the lines after it are kept", async () => {
    const run = await finishedRun();
    const file = join(run, "groups.jsonl");
    const good = await readFile(file, "utf8");
    await writeFile(file, `{"edited": \n${good}`);
    const r = await exportRun({
      runDir: run,
      format: "atropos",
      out: join(run, "g.jsonl"),
      segments: "split",
    });
    expect(r.records).toBe(good.trim().split("\n").length);
    expect(r.excluded.map((x) => x.reason)).toEqual([
      expect.stringMatching(/groups\.jsonl: line 1 is not JSON/),
    ]);
  });

  it("one cut result.json: atif exports the others and names the cut file; readResults names it too", async () => {
    const run = await finishedRun();
    const ids = (await readdir(join(run, "trajectories"))).sort();
    const cut = join(run, "trajectories", ids[1]!, "result.json");
    await truncate(cut, 40);
    const r = await exportRun({ runDir: run, format: "atif", out: join(run, "atif"), segments: "split" });
    expect(r.records).toBe(ids.length - 1);
    expect(r.excluded).toEqual([
      { trajectory_id: ids[1], reason: expect.stringContaining(`truncated or not JSON: ${cut}`) },
    ]);
    await expect(readResults(run)).rejects.toThrow(cut);
    // an edited (valid JSON, wrong shape) result.json is named with its field
    await writeFile(cut, "{}\n");
    const r2 = await exportRun({ runDir: run, format: "atif", out: join(run, "atif2"), segments: "split" });
    expect(r2.excluded[0]!.reason).toMatch(new RegExp(`${cut}: field '`));
  });
});

describe("export --out inside the run", () => {
  it("the run's own files, its trajectories or the run dir itself are refused before anything is written; <run>/export/ is fine", async () => {
    const run = await finishedRun();
    const groups = await readFile(join(run, "groups.jsonl"), "utf8");
    for (const out of [join(run, "groups.jsonl"), join(run, "trajectories", "a-t0", "x.jsonl"), run]) {
      const err = await exportRun({ runDir: run, format: "samples", out, segments: "split" }).catch(
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/--out .* (is the run directory itself|is the run's own)/);
    }
    expect(await readFile(join(run, "groups.jsonl"), "utf8")).toBe(groups);
    expect(exportOutProblem(run, join(run, "export", "verl.jsonl"))).toBeUndefined();
    expect(exportOutProblem(run, join(run, "..", "elsewhere.jsonl"))).toBeUndefined();
  });
});

describe("export --format atif: the directory is written whole", () => {
  const runIdsIn = async (dir: string) => {
    const ids = new Set<string>();
    for (const f of await readdir(dir)) {
      if (f.endsWith(".verifier.json")) continue;
      const m = /run-\d+/.exec(await readFile(join(dir, f), "utf8"));
      ids.add(m ? m[0] : `${f}: no run id`);
    }
    return [...ids];
  };

  it("two exports of two runs into one --out at once: the directory is one run's, never a mix", async () => {
    const [a, b] = [await finishedRun(), await finishedRun()];
    for (let i = 0; i < 5; i++) {
      const out = join(tmp, `atif-both-${i}`);
      const both = await Promise.all(
        [a, b].map((runDir) => exportRun({ runDir, format: "atif", out, segments: "split" })),
      );
      expect(both.map((r) => r.records)).toEqual([both[0]!.records, both[0]!.records]);
      expect(await runIdsIn(out), JSON.stringify(await runIdsIn(out))).toHaveLength(1);
      expect((await readdir(out)).length).toBe(2 * both[0]!.records);
    }
  });

  it("an export over an older atif export leaves none of the older files; a directory holding anything else is refused, untouched", async () => {
    const run = await finishedRun();
    const out = join(tmp, "atif-again");
    await exportRun({ runDir: run, format: "atif", out, segments: "split" });
    const older = join(out, "z-t9.json");
    await writeFile(older, "{}\n");
    await writeFile(join(out, "z-t9.verifier.json"), "{}\n");
    const r = await exportRun({ runDir: run, format: "atif", out, segments: "split" });
    expect((await readdir(out)).sort()).not.toContain("z-t9.json");
    expect((await readdir(out)).length).toBe(2 * r.records);
    const mine = join(out, "notes.txt");
    await writeFile(mine, "my notes\n");
    const before = (await readdir(out)).sort();
    const err = await exportRun({ runDir: run, format: "atif", out, segments: "split" }).catch(
      (e: Error) => e,
    );
    expect(String(err)).toContain(mine);
    expect((await readdir(out)).sort()).toEqual(before);
    // nothing of the refused export is left beside it
    expect((await readdir(tmp)).filter((f) => f.startsWith(".atif-again"))).toEqual([]);
  });
});
