import type { SchemaElement } from "hyparquet";
import type { ColumnSource } from "hyparquet-writer";
import { parquetWriteBuffer } from "hyparquet-writer";

/**
 * Trainer records (one JSON object per row) as one Parquet table: a column per top-level field, in
 * the order fields first appear. A field whose values are all scalars of one kind becomes that
 * Parquet type (integers INT64, other numbers DOUBLE, BOOLEAN, STRING); a list of such scalars (token
 * ids, masks, logprobs) a native LIST column, so pandas, Arrow and `datasets` read them as lists;
 * anything else (nested objects, lists of lists) a JSON column. A field missing from some rows, or
 * null in them, is OPTIONAL. Pure, apart from the writer it calls.
 */

type Scalar = "int" | "double" | "boolean" | "string";
/** How one column is stored (a pure decision from its values, unit-tested). */
export type ColumnKind =
  | { readonly kind: "scalar"; readonly scalar: Scalar; readonly optional: boolean }
  | { readonly kind: "list"; readonly scalar: Scalar; readonly optional: boolean }
  | { readonly kind: "json"; readonly optional: boolean };

function scalarOf(v: unknown): Scalar | undefined {
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "string") return "string";
  if (typeof v === "number" && Number.isFinite(v)) return Number.isSafeInteger(v) ? "int" : "double";
  return undefined;
}

/** The one scalar kind of `values` (ints widen to double), or undefined when they are mixed. */
function unify(values: Iterable<unknown>): Scalar | undefined | "none" {
  let kind: Scalar | "none" = "none";
  for (const v of values) {
    const s = scalarOf(v);
    if (!s) return undefined;
    if (kind === "none" || kind === s) kind = s;
    else if ((kind === "int" && s === "double") || (kind === "double" && s === "int")) kind = "double";
    else return undefined;
  }
  return kind;
}

/** The storage of a column from its values (`undefined`/`null` for a row that lacks it). Pure. */
export function columnKind(values: readonly unknown[]): ColumnKind {
  const present = values.filter((v) => v !== undefined && v !== null);
  const optional = present.length < values.length;
  if (present.length > 0 && present.every(Array.isArray)) {
    const element = unify((present as unknown[][]).flat());
    // an all-empty list column has no element type to learn: store its lists as int lists
    if (element !== undefined)
      return { kind: "list", scalar: element === "none" ? "int" : element, optional };
  }
  const scalar = unify(present);
  if (scalar !== undefined && scalar !== "none") return { kind: "scalar", scalar, optional };
  return { kind: "json", optional };
}

const PARQUET_TYPE = { int: "INT64", double: "DOUBLE", boolean: "BOOLEAN", string: "BYTE_ARRAY" } as const;

function leaf(name: string, scalar: Scalar, repetition: "REQUIRED" | "OPTIONAL"): SchemaElement {
  return {
    name,
    type: PARQUET_TYPE[scalar],
    repetition_type: repetition,
    ...(scalar === "string" ? { converted_type: "UTF8" as const } : {}),
  };
}

function toCell(v: unknown, k: ColumnKind): unknown {
  if (v === undefined || v === null) return null;
  if (k.kind === "json") return v;
  const one = (x: unknown) =>
    k.scalar === "int" ? BigInt(x as number) : k.scalar === "double" ? Number(x) : x;
  return k.kind === "list" ? (v as unknown[]).map(one) : one(v);
}

/** The Parquet bytes of `rows` (objects with the same fields, by and large). */
export function parquetTable(rows: readonly Record<string, unknown>[]): Uint8Array {
  const names: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!names.includes(k)) names.push(k);
  const schema: SchemaElement[] = [{ name: "root", num_children: names.length }];
  const columnData: ColumnSource[] = [];
  for (const name of names) {
    const values = rows.map((r) => r[name]);
    const k = columnKind(values);
    const repetition = k.optional ? "OPTIONAL" : "REQUIRED";
    if (k.kind === "list") {
      schema.push(
        { name, repetition_type: repetition, converted_type: "LIST", num_children: 1 },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        leaf("element", k.scalar, "REQUIRED"),
      );
    } else if (k.kind === "scalar") {
      schema.push(leaf(name, k.scalar, repetition));
    } else {
      schema.push({ name, type: "BYTE_ARRAY", converted_type: "JSON", repetition_type: repetition });
    }
    columnData.push({ name, data: values.map((v) => toCell(v, k)) } as ColumnSource);
  }
  return new Uint8Array(parquetWriteBuffer({ columnData, schema }));
}
