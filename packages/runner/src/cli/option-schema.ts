import type { z } from "zod";

/** What the parser and the help generator need to know about one option. */
export interface OptionInfo {
  /** camelCase key in the schema. */
  readonly key: string;
  /** `--kebab-case` flag. */
  readonly flag: string;
  readonly kind: "string" | "number" | "boolean" | "enum" | "array";
  readonly description: string;
  readonly required: boolean;
  readonly defaultValue: unknown;
  /** Allowed values for enums. */
  readonly choices?: readonly string[];
  /** Item kind for arrays (repeatable flags). */
  readonly itemKind?: "string" | "number" | "enum";
}

type AnyZod = z.ZodType & { def: { type: string; innerType?: AnyZod; element?: AnyZod; in?: AnyZod } };

export function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function baseKind(schema: AnyZod): { kind: OptionInfo["kind"]; choices?: string[]; item?: AnyZod } {
  const t = schema.def.type;
  switch (t) {
    case "string":
      return { kind: "string" };
    case "number":
    case "int":
      return { kind: "number" };
    case "boolean":
      return { kind: "boolean" };
    case "enum":
      return { kind: "enum", choices: (schema as unknown as { options: string[] }).options.map(String) };
    case "array":
      return { kind: "array", item: schema.def.element as AnyZod };
    case "pipe":
      return baseKind(schema.def.in as AnyZod);
    default:
      throw new Error(`option schema type '${t}' is not supported by the CLI parser`);
  }
}

/** Reads the CLI-relevant facts from each field of a zod object. */
export function describeOptions(schema: z.ZodObject): OptionInfo[] {
  return Object.entries(schema.shape).map(([key, field]) => {
    let cur = field as AnyZod;
    let required = true;
    let defaultValue: unknown;
    let description = cur.description ?? "";
    while (cur.def.type === "optional" || cur.def.type === "default" || cur.def.type === "nullable") {
      if (cur.def.type === "default") defaultValue = (cur.def as { defaultValue?: unknown }).defaultValue;
      required = false;
      cur = cur.def.innerType as AnyZod;
      if (!description && cur.description) description = cur.description;
    }
    const base = baseKind(cur);
    const info: OptionInfo = {
      key,
      flag: `--${kebab(key)}`,
      kind: base.kind,
      description,
      required: required && base.kind !== "boolean",
      defaultValue,
      ...(base.choices ? { choices: base.choices } : {}),
    };
    if (base.item) {
      const item = baseKind(base.item);
      if (item.kind === "array" || item.kind === "boolean") {
        throw new Error(`option '${key}': arrays of ${item.kind} are not supported`);
      }
      return { ...info, itemKind: item.kind, ...(item.choices ? { choices: item.choices } : {}) };
    }
    return info;
  });
}
