import type { z } from "zod";
import { UsageError } from "../errors.js";
import { describeOptions, type OptionInfo } from "./option-schema.js";

function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDist = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return bestDist <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

function convert(opt: OptionInfo, raw: string, kind: OptionInfo["kind"] | undefined): unknown {
  switch (kind) {
    case "number": {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) {
        throw new UsageError(`${opt.flag} expects a number, got '${raw}'`);
      }
      return n;
    }
    case "enum":
      if (!opt.choices?.includes(raw)) {
        throw new UsageError(
          `${opt.flag} does not accept '${raw}'`,
          `allowed values: ${opt.choices?.join(", ")}`,
        );
      }
      return raw;
    default:
      return raw;
  }
}

/**
 * Parses `--flag value`, `--flag=value`, `--flag` / `--no-flag` (booleans) and repeated flags
 * (arrays) against a zod object, then validates with the schema. Errors name the flag.
 */
export function parseArgs<S extends z.ZodObject>(
  schema: S,
  argv: readonly string[],
  positional?: string,
): z.infer<S> {
  const infos = describeOptions(schema);
  const byFlag = new Map(infos.map((o) => [o.flag, o]));
  const raw: Record<string, unknown> = {};
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (!token.startsWith("--") && positional !== undefined && !(positional in raw)) {
      raw[positional] = token;
      continue;
    }
    if (!token.startsWith("--")) {
      throw new UsageError(
        `unexpected argument '${token}'`,
        `this command takes only flags: ${infos.map((o) => o.flag).join(", ") || "(none)"}`,
      );
    }
    const eq = token.indexOf("=");
    let name = eq === -1 ? token : token.slice(0, eq);
    let inline = eq === -1 ? undefined : token.slice(eq + 1);
    let opt = byFlag.get(name);
    if (!opt && name.startsWith("--no-")) {
      const positive = byFlag.get(`--${name.slice(5)}`);
      if (positive?.kind === "boolean" && inline === undefined) {
        opt = positive;
        name = positive.flag;
        inline = "false";
      }
    }
    if (!opt) {
      const guess = closest(name, [...byFlag.keys()]);
      throw new UsageError(
        `unknown flag '${name}'`,
        guess
          ? `did you mean ${guess}? (see --help)`
          : `known flags: ${[...byFlag.keys()].join(", ") || "(none)"}`,
      );
    }
    if (opt.kind === "boolean") {
      if (inline === undefined) raw[opt.key] = true;
      else if (inline === "true" || inline === "false") raw[opt.key] = inline === "true";
      else throw new UsageError(`${opt.flag} is a switch; it takes no value (got '${inline}')`);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) {
        throw new UsageError(`${opt.flag} needs a value`, describeValue(opt));
      }
      value = next;
      i++;
    }
    if (opt.kind === "array") {
      const list = (raw[opt.key] as unknown[] | undefined) ?? [];
      list.push(convert(opt, value, opt.itemKind));
      raw[opt.key] = list;
    } else {
      if (opt.key in raw) throw new UsageError(`${opt.flag} was given more than once`);
      raw[opt.key] = convert(opt, value, opt.kind);
    }
  }
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = String(issue.path[0] ?? "");
    const opt = infos.find((o) => o.key === key);
    const flag = opt?.flag ?? key;
    if (issue.code === "invalid_type" && raw[key] === undefined) {
      throw new UsageError(`missing required flag ${flag}`, opt ? describeValue(opt) : undefined);
    }
    throw new UsageError(`${flag}: ${issue.message}`, opt ? describeValue(opt) : undefined);
  }
  return result.data;
}

function describeValue(opt: OptionInfo): string {
  const what = opt.choices ? `one of: ${opt.choices.join(", ")}` : `a ${opt.itemKind ?? opt.kind}`;
  return `${opt.flag} takes ${what}${opt.description ? ` (${opt.description})` : ""}`;
}
