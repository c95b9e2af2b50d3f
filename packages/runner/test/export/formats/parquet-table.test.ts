import { parquetMetadata, parquetReadObjects, parquetSchema } from "hyparquet";
import { describe, expect, it } from "vitest";
import { columnKind, parquetTable } from "../../../src/export/formats/parquet-table.js";

/** Reads a table back with an independent reader; INT64 cells come back as bigint. */
async function readBack(bytes: Uint8Array): Promise<Record<string, unknown>[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = await parquetReadObjects({ file });
  return JSON.parse(JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? Number(v) : v)));
}

describe("columnKind", () => {
  it("chooses scalar, list or JSON storage from a column's values", () => {
    expect(columnKind([1, 2, 3])).toEqual({ kind: "scalar", scalar: "int", optional: false });
    expect(columnKind([1, 2.5])).toEqual({ kind: "scalar", scalar: "double", optional: false });
    expect(columnKind(["a", undefined])).toEqual({ kind: "scalar", scalar: "string", optional: true });
    expect(columnKind([[1, 2], [3]])).toEqual({ kind: "list", scalar: "int", optional: false });
    expect(columnKind([[true], [false, true]])).toEqual({ kind: "list", scalar: "boolean", optional: false });
    expect(columnKind([[-0.5, -1], []])).toEqual({ kind: "list", scalar: "double", optional: false });
    expect(columnKind([[], []])).toEqual({ kind: "list", scalar: "int", optional: false });
    expect(columnKind([{ a: 1 }, { a: 2 }])).toEqual({ kind: "json", optional: false });
    expect(columnKind([[[1], [2]]])).toEqual({ kind: "json", optional: false });
    expect(columnKind([1, "x"])).toEqual({ kind: "json", optional: false });
    expect(columnKind([null, null])).toEqual({ kind: "json", optional: true });
  });
});

describe("parquetTable", () => {
  it("writes trainer records that an independent reader gives back field for field, lists as lists", async () => {
    const rows = [
      {
        prompt_ids: [151644, 8948, 198],
        response_ids: [40, 1079, 151645],
        response_mask: [1, 1, 0],
        response_logprobs: [-0.25, -1.5, 0],
        reward_score: 1,
        num_turns: 3,
        rollout_id: 2 ** 52 - 7,
        loss_mask: [true, false, true],
        status: "completed",
        metrics: { generate_sequences: 1.25, tool_calls: 2 },
      },
      {
        prompt_ids: [151644],
        response_ids: [],
        response_mask: [],
        response_logprobs: [],
        reward_score: 0.5,
        num_turns: 1,
        rollout_id: 12,
        loss_mask: [],
        metrics: { generate_sequences: 0.5, tool_calls: 0 },
      },
    ];
    const bytes = parquetTable(rows);
    const back = await readBack(bytes);
    expect(back).toEqual([rows[0], { ...rows[1], status: null }]);
    // lists are native LIST columns, not JSON strings
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const schema = parquetSchema(parquetMetadata(file));
    const byName = new Map(schema.children.map((c) => [c.element.name, c.element]));
    expect(byName.get("prompt_ids")?.converted_type).toBe("LIST");
    expect(byName.get("response_logprobs")?.converted_type).toBe("LIST");
    expect(byName.get("metrics")?.converted_type).toBe("JSON");
    expect(byName.get("status")?.repetition_type).toBe("OPTIONAL");
  });
});
