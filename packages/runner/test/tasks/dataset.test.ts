import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { formatRowError, loadDataset } from "../../src/tasks/dataset.js";
import { parseDatasetRow } from "../../src/tasks/dataset-row.js";

const fixture = (name: string) =>
  fileURLToPath(new URL(`../../../../tests/fixtures/${name}`, import.meta.url));
const SAMPLE_IDS = ["ratatui-2148", "phaser-0001", "py-0002", "go-0003", "c-0004", "ts-0005", "misc-0006"];

describe("loadDataset", () => {
  it("reads the JSONL sample: prompt = first human turn, language → profile, JSON-string conversations", async () => {
    const d = await loadDataset(fixture("swe-agent-13k-sample.jsonl"));
    expect(d.summary).toMatchObject({ format: "jsonl", rows: 7, accepted: 7, rejected: 0 });
    expect(d.tasks.map((t) => t.id)).toEqual(SAMPLE_IDS);
    const byId = Object.fromEntries(d.tasks.map((t) => [t.id, t]));
    expect(byId["ratatui-2148"]).toMatchObject({
      repo: "ratatui/ratatui",
      repoKind: "url",
      repoUrl: "https://github.com/ratatui/ratatui",
      language: "Rust",
      profile: "rust",
      source: { row: 1 },
    });
    expect(byId["ratatui-2148"]!.prompt).toMatch(/^Add support for vertical gauges/);
    // conversations given as a JSON string, and a base_commit
    expect(byId["py-0002"]).toMatchObject({
      profile: "python",
      commit: "0e322af87745eff34caffe4df68456ebc20d9068",
    });
    expect(byId["py-0002"]!.prompt).toMatch(/^Session.request should reject/);
    expect(byId["go-0003"]).toMatchObject({ branch: "main", profile: "go" });
    // only a human turn (no system turn first)
    expect(byId["c-0004"]!.prompt).toMatch(/^sdscatrepr/);
    // owner/repo without URL → github URL; extra columns kept as metadata
    expect(byId["ts-0005"]).toMatchObject({
      repoKind: "github",
      profile: "node",
      metadata: { task_type: "feature", target: true },
    });
    // empty language → the fallback profile
    expect(byId["misc-0006"]).toMatchObject({ language: "", profile: "dev-base" });
  });

  for (const name of ["swe-agent-13k-sample.parquet", "swe-agent-13k-strings.parquet"]) {
    it(`reads Parquet (${name}) into the same tasks and rejects its bad row`, async () => {
      const jsonl = await loadDataset(fixture("swe-agent-13k-sample.jsonl"));
      const pq = await loadDataset(fixture(name));
      expect(pq.summary).toMatchObject({ format: "parquet", rows: 8, accepted: 7, rejected: 1 });
      const strip = (t: (typeof jsonl.tasks)[number]) => ({ ...t, source: undefined, metadata: undefined });
      expect(pq.tasks.map(strip)).toEqual(jsonl.tasks.map(strip));
      expect(pq.rejected).toEqual([
        expect.objectContaining({
          row: 8,
          field: "repo_name",
          id: "bad-no-repo",
          reason: expect.stringMatching(/^missing/),
        }),
      ]);
    });
  }

  it("rejects bad rows naming file, row and field, and keeps the good ones", async () => {
    const file = fixture("swe-agent-13k-bad.jsonl");
    const d = await loadDataset(file);
    expect(d.summary).toMatchObject({ rows: 10, accepted: 2, rejected: 8 });
    expect(d.tasks.map((t) => [t.id, t.repoKind])).toEqual([
      ["ok-1", "github"],
      ["local-ok", "local"],
    ]);
    expect(d.rejected.map((e) => [e.row, e.field])).toEqual([
      [2, "repo_name"],
      [3, "conversations"],
      [5, "conversations"],
      [6, "(row)"],
      [7, "base_commit"],
      [8, "id"],
      [9, "repo_name"],
      [11, "id"],
    ]);
    expect(formatRowError(d.rejected[4]!)).toBe(
      `${file}:7: [bad-commit] field 'base_commit': 'not-a-sha' is not a hex commit id (7–40 hex digits)`,
    );
    expect(d.rejected[5]!.reason).toBe("duplicate id 'ok-1' (first seen in row 1)");
    expect(d.rejected[7]!.reason).toBe("missing");
  });

  it("a missing file is a usage error (exit 2) naming the flag and path, whose hint says what to check instead of repeating the flag", async () => {
    const err = await loadDataset("/nonexistent/rows.jsonl").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect(err).toMatchObject({
      code: "E_DATASET",
      message: "--dataset /nonexistent/rows.jsonl: no such file or directory",
    });
    expect((err as UsageError).hint).toMatch(/^check the path/);
    expect((err as UsageError).hint).not.toContain("--dataset");
  });

  it("a truncated Parquet file is an error naming the file", async () => {
    const { mkdtemp, readFile, writeFile } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const dir = await mkdtemp(`${tmpdir()}/fg-pq-`);
    const bytes = await readFile(fixture("swe-agent-13k-sample.parquet"));
    await writeFile(`${dir}/cut.parquet`, bytes.subarray(0, bytes.length - 20));
    await expect(loadDataset(`${dir}/cut.parquet`)).rejects.toThrow(/cut.parquet: cannot read as Parquet/);
  });
});

describe("parseDatasetRow", () => {
  const at = { file: "f.jsonl", row: 3 };
  it("classifies repos: URL, owner/repo, local path", () => {
    const base = { id: "x", conversations: [{ from: "human", value: "p" }] };
    const kinds = [
      [{ repo_url: "git@example.org:a/b.git" }, "url"],
      [{ repo_name: "a/b" }, "github"],
      [{ repo_url: "/srv/repos/b" }, "local"],
    ] as const;
    for (const [extra, kind] of kinds) {
      const r = parseDatasetRow({ ...base, ...extra }, at);
      expect(r.ok && r.task.repoKind).toBe(kind);
    }
  });
  it("rejects a conversations string that is JSON but not a list of turns", () => {
    const r = parseDatasetRow({ id: "x", repo_name: "a/b", conversations: '{"from":"human"}' }, at);
    expect(r).toMatchObject({ ok: false, error: { field: "conversations", row: 3, file: "f.jsonl" } });
  });
  it("rejects a non-object row", () => {
    expect(parseDatasetRow([1, 2], at)).toMatchObject({
      ok: false,
      error: { field: "(row)", reason: "expected an object, got an array" },
    });
  });
});
