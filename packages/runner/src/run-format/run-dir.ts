import { mkdir, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { z } from "zod";

import { FlakegymError } from "../errors.js";
import { parseJsonFile } from "./json-file.js";
import { readJsonl, readJsonlLenient, repairJsonl, writeJsonAtomic } from "./jsonl.js";
import { GroupLine, MetricsLine, RunManifest, SampleLine, TrajectoryResult } from "./schema.js";

/** What the run directory already holds (read by `readRunState`). */
export interface RunState {
  /** Finished trajectories (their result.json), by trajectory id. */
  readonly results: ReadonlyMap<string, TrajectoryResult>;
  /** Trajectory directories without a result.json: started, never finished. */
  readonly partial: readonly string[];
  readonly metricsIds: ReadonlySet<string>;
  readonly samplesIds: ReadonlySet<string>;
  /** Task ids that have a line in groups.jsonl. */
  readonly groupTasks: ReadonlySet<string>;
  /**
   * Complete lines of metrics.jsonl / samples.jsonl that are not JSON or not a line of that file,
   * one sentence each (file, line, why): skipped, and the trajectory they stood for, if any, gets
   * its line written again from its result.json. groups.jsonl has no such leniency: a group line
   * is final, so a bad one stops the reader.
   */
  readonly badLines: readonly string[];
}

/** The layout of a run directory (`--out`). */
export function runPaths(dir: string) {
  return {
    dir,
    manifest: join(dir, "run.json"),
    groups: join(dir, "groups.jsonl"),
    samples: join(dir, "samples.jsonl"),
    metrics: join(dir, "metrics.jsonl"),
    summary: join(dir, "summary.json"),
    atroposMarks: join(dir, "atropos-sent.jsonl"),
    trajectories: join(dir, "trajectories"),
    trajectory: (id: string) => {
      const t = join(dir, "trajectories", id);
      return {
        dir: t,
        result: join(t, "result.json"),
        score: join(t, "score.json"),
        diff: join(t, "diff.patch"),
        attempts: join(t, "attempts"),
      };
    },
  };
}
export type RunPaths = ReturnType<typeof runPaths>;

/** The JSONL files of a run: `--resume` truncates a torn last line in each. */
export const jsonlFiles = (p: RunPaths) => [p.groups, p.samples, p.metrics, p.atroposMarks];

export async function readManifest(p: RunPaths): Promise<RunManifest> {
  let text: string;
  try {
    text = await readFile(p.manifest, "utf8");
  } catch (cause) {
    throw new FlakegymError("E_RESUME", `${p.manifest} cannot be read`, {
      cause,
      hint: "--resume takes a run directory written by `flakegym rollout` (it holds run.json)",
    });
  }
  const parsed = RunManifest.safeParse(
    parseJsonFile(text, p.manifest, "restore it (from a backup), or start a new run with another --out"),
  );
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new FlakegymError("E_RESUME", `${p.manifest}: field '${issue.path.join(".")}': ${issue.message}`, {
      hint: "the run was written by an incompatible flakegym version; start a new run",
    });
  }
  return parsed.data;
}

export const writeManifest = (p: RunPaths, m: RunManifest) =>
  writeJsonAtomic(p.manifest, RunManifest.parse(m));

/** Reads what a run directory already holds (and, with `repair`, truncates torn JSONL tails). */
export async function readRunState(
  p: RunPaths,
  opts: { repair: boolean },
): Promise<RunState & { tornBytes: number }> {
  let tornBytes = 0;
  if (opts.repair) for (const f of jsonlFiles(p)) tornBytes += await repairJsonl(f);
  await mkdir(p.trajectories, { recursive: true });
  const results = new Map<string, TrajectoryResult>();
  const partial: string[] = [];
  for (const d of await readdir(p.trajectories, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    const file = p.trajectory(d.name).result;
    let text: string | undefined;
    try {
      text = await readFile(file, "utf8");
    } catch {
      partial.push(d.name);
      continue;
    }
    const parsed = TrajectoryResult.safeParse(
      parseJsonFile(
        text,
        file,
        "delete that trajectory directory to run it again (before its group is written)",
      ),
    );
    if (!parsed.success) {
      throw new FlakegymError(
        "E_RESUME",
        `${file}: field '${parsed.error.issues[0]!.path.join(".")}' is invalid`,
        {
          hint: "delete that trajectory directory to run it again",
        },
      );
    }
    results.set(parsed.data.trajectoryId, parsed.data);
  }
  const badLines: string[] = [];
  const ids = async <T extends { trajectory_id: string }>(file: string, schema: z.ZodType<T>) => {
    const read = await readJsonlLenient(file, schema);
    badLines.push(...read.bad);
    return new Set(read.records.map((r) => r.trajectory_id));
  };
  const groups = (await readJsonl(p.groups, GroupLine)).records;
  return {
    results,
    partial,
    metricsIds: await ids(p.metrics, MetricsLine),
    samplesIds: await ids(p.samples, SampleLine),
    groupTasks: new Set(groups.map((g) => String(g.group_overrides?.task_id ?? ""))),
    badLines,
    tornBytes,
  };
}

/** Removes a never-finished trajectory directory so it can run again from scratch. */
export async function cleanTrajectory(p: RunPaths, id: string): Promise<void> {
  await rm(p.trajectory(id).dir, { recursive: true, force: true });
}

/** The group lines of a run. */
export async function readGroups(p: RunPaths): Promise<GroupLine[]> {
  return (await readJsonl(p.groups, GroupLine)).records;
}

/** Moves a failed attempt's files into the trajectory's `attempts/<attempt>/` (a retry starts clean). */
export async function moveToAttempt(p: RunPaths, id: string, attempt: number): Promise<void> {
  const t = p.trajectory(id);
  const dest = join(t.attempts, String(attempt));
  await mkdir(dest, { recursive: true });
  for (const name of await readdir(t.dir)) {
    if (name === "attempts") continue;
    await rename(join(t.dir, name), join(dest, name));
  }
}

/** The duration stored by an earlier session of this run (undefined when there is no summary). */
export async function priorDurationMs(p: RunPaths): Promise<number | undefined> {
  try {
    const d = (JSON.parse(await readFile(p.summary, "utf8")) as { durationMs?: unknown }).durationMs;
    return typeof d === "number" && Number.isFinite(d) ? d : undefined;
  } catch {
    return undefined;
  }
}
