import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  datasetSummaryOf,
  idProblem,
  reselectDataset,
  selectDataset,
  selectRows,
} from "../../src/rollout/dataset-tasks.js";
import type { TaskProfile } from "../../src/tasks/task-profile.js";

const row = (id: string, n: number, repoUrl = "./repos/a"): TaskProfile => ({
  id,
  repo: repoUrl,
  repoKind: repoUrl.startsWith("https://") ? "url" : "local",
  repoUrl,
  language: "JavaScript",
  profile: "node",
  prompt: `task ${id}`,
  source: { file: "/data/rows.jsonl", row: n },
  metadata: {},
});

const line = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id,
    repo_url: "./repo",
    language: "JavaScript",
    conversations: [{ from: "human", value: `do ${id}` }],
    ...extra,
  });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flakegym-dataset-tasks-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("selectRows", () => {
  it("takes the first --limit usable rows in file order and resolves local paths against the file's directory", () => {
    const s = selectRows(
      "/data/rows.jsonl",
      [row("a", 1), row("b", 2, "https://example.test/b.git"), row("c", 3, "/abs/c")],
      2,
    );
    expect(s.tasks.map((t) => [t.id, t.repoUrl])).toEqual([
      ["a", "/data/repos/a"],
      ["b", "https://example.test/b.git"],
    ]);
    expect(s.rejected).toEqual([]);
    expect(
      selectRows("/data/rows.jsonl", [row("a", 1), row("c", 3, "/abs/c")], undefined).tasks,
    ).toHaveLength(2);
  });

  it("rejects ids that cannot name trajectory directories, naming the row and field", () => {
    const s = selectRows("/data/rows.jsonl", [row("ok-1", 1), row("owner/repo#2", 2), row("ok.3", 3)], 5);
    expect(s.tasks.map((t) => t.id)).toEqual(["ok-1", "ok.3"]);
    expect(s.rejected).toEqual([
      {
        file: "/data/rows.jsonl",
        row: 2,
        field: "id",
        id: "owner/repo#2",
        reason: expect.stringMatching(/cannot name trajectory directories/),
      },
    ]);
    expect(idProblem("..")).toBeDefined();
    expect(idProblem("-x")).toBeDefined();
    expect(idProblem("swe_123.a-b")).toBeUndefined();
  });
});

describe("selectDataset / reselectDataset", () => {
  it("selects, hashes and counts; a resume finds the same rows, and refuses a changed file", async () => {
    const file = join(dir, "rows.jsonl");
    await writeFile(file, [line("r1"), "{not json", line("r2"), line("r3")].join("\n"));
    const sel = await selectDataset(file, 2);
    expect(sel.tasks.map((t) => t.id)).toEqual(["r1", "r2"]);
    expect(sel.tasks[0]!.repoUrl).toBe(join(dir, "repo"));
    expect(sel.config).toEqual({
      file,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      format: "jsonl",
      limit: 2,
    });
    expect(sel.rejected).toEqual([
      { file, row: 2, field: "(row)", reason: expect.stringMatching(/not valid JSON/) },
    ]);
    expect(datasetSummaryOf(sel)).toMatchObject({ rows: 4, accepted: 3, rejected: 1, used: 2 });

    const again = await reselectDataset(sel.config, ["r1", "r2"]);
    expect(again.tasks.map((t) => t.id)).toEqual(["r1", "r2"]);

    await writeFile(file, [line("r1"), line("r2", { base_commit: "abcdef1" })].join("\n"));
    await expect(reselectDataset(sel.config, ["r1", "r2"])).rejects.toMatchObject({
      code: "E_DATASET_CHANGED",
      message: expect.stringMatching(/rows\.jsonl changed since the run started/),
    });
    await rm(file);
    await expect(reselectDataset(sel.config, ["r1"])).rejects.toMatchObject({
      code: "E_DATASET_CHANGED",
      message: expect.stringMatching(/cannot be read/),
    });
  });

  it("reads Parquet the same way", async () => {
    const file = fileURLToPath(
      new URL("../../../../tests/fixtures/swe-agent-13k-sample.parquet", import.meta.url),
    );
    const sel = await selectDataset(file, 2);
    expect(sel.config).toMatchObject({ format: "parquet", limit: 2 });
    expect(sel.tasks.map((t) => t.id)).toEqual(["ratatui-2148", "phaser-0001"]);
    expect((await reselectDataset(sel.config, ["phaser-0001"])).tasks.map((t) => t.id)).toEqual([
      "phaser-0001",
    ]);
  });

  it("fails when no row is usable, pointing at tasks check", async () => {
    const file = join(dir, "bad.jsonl");
    await writeFile(file, `${JSON.stringify({ id: "x", conversations: [] })}\n`);
    await expect(selectDataset(file, undefined)).rejects.toMatchObject({
      code: "E_DATASET",
      message: expect.stringMatching(/no usable row \(1 read, 1 rejected\)/),
      hint: expect.stringMatching(/flakegym tasks check --dataset/),
    });
  });
});
