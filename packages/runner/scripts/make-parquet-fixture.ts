/**
 * Regenerates the Parquet fixtures from tests/fixtures/swe-agent-13k-sample.jsonl (rows in the
 * dataset's schema) with hyparquet-writer, plus one bad row (no repo) at the end:
 * - swe-agent-13k-sample.parquet: `conversations` as a nested list<struct<from, value>>, the shape
 *   of the Hugging Face Parquet export;
 * - swe-agent-13k-strings.parquet: `conversations` as a JSON string column (the other shape the
 *   dataset's rows come in).
 * Run: `npm run fixtures:parquet -w @flakegym/runner`.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parquetWriteBuffer } from "hyparquet-writer";

const dir = new URL("../../../tests/fixtures/", import.meta.url);
const rows = readFileSync(new URL("swe-agent-13k-sample.jsonl", dir), "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as Record<string, unknown>);
rows.push({ id: "bad-no-repo", language: "Go", conversations: [{ from: "human", value: "orphan row" }] });

type Turn = { from: string; value: string };
const turns = (r: Record<string, unknown>): Turn[] =>
  typeof r.conversations === "string" ? (JSON.parse(r.conversations) as Turn[]) : (r.conversations as Turn[]);
const str = (r: Record<string, unknown>, k: string) => (typeof r[k] === "string" ? (r[k] as string) : null);
const text = { type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" } as const;
const scalarColumns = ["repo_name", "repo_url", "language", "base_commit", "branch"] as const;

function write(name: string, nested: boolean): void {
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: "id", data: rows.map((r) => String(r.id)) },
      ...scalarColumns.map((c) => ({ name: c, data: rows.map((r) => str(r, c)) })),
      {
        name: "conversations",
        data: rows.map((r) => (nested ? turns(r) : JSON.stringify(turns(r)))),
      },
    ],
    schema: [
      { name: "root", num_children: 2 + scalarColumns.length },
      { name: "id", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
      ...scalarColumns.map((c) => ({ name: c, ...text })),
      ...(nested
        ? [
            {
              name: "conversations",
              repetition_type: "OPTIONAL",
              converted_type: "LIST",
              num_children: 1,
            } as const,
            { name: "list", repetition_type: "REPEATED", num_children: 1 } as const,
            { name: "element", repetition_type: "OPTIONAL", num_children: 2 } as const,
            { name: "from", ...text },
            { name: "value", ...text },
          ]
        : [{ name: "conversations", ...text }]),
    ],
  });
  const out = fileURLToPath(new URL(name, dir));
  writeFileSync(`${out}.tmp`, new Uint8Array(buffer));
  renameSync(`${out}.tmp`, out);
  console.log(`wrote ${out} (${rows.length} rows)`);
}

write("swe-agent-13k-sample.parquet", true);
write("swe-agent-13k-strings.parquet", false);
