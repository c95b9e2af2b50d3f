/**
 * A record delivered twice (a group line appended again, a samples line repeated) is one record:
 * the first record of each key is kept, every later one is left out and named (its record number,
 * the key and the record it repeats), so a trainer never gets one group or trajectory twice. Lines without a key
 * are kept as they are. Pure.
 */
export function withoutRepeats(
  lines: readonly string[],
  keyOf: (record: Record<string, unknown>) => string | undefined,
): { kept: string[]; repeats: { record: number; why: string }[] } {
  const firstAt = new Map<string, number>();
  const kept: string[] = [];
  const repeats: { record: number; why: string }[] = [];
  lines.forEach((l, i) => {
    const key = keyOfLine(l, keyOf);
    const first = key === undefined ? undefined : firstAt.get(key);
    if (key !== undefined && first !== undefined) {
      const same = lines[first - 1] === l ? "the same record" : "another record";
      repeats.push({
        record: i + 1,
        why: `record ${i + 1} repeats ${key} of record ${first} (${same}): left out, the first kept`,
      });
      return;
    }
    if (key !== undefined) firstAt.set(key, i + 1);
    kept.push(l);
  });
  return { kept, repeats };
}

function keyOfLine(
  line: string,
  keyOf: (r: Record<string, unknown>) => string | undefined,
): string | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? keyOf(v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The key of a groups.jsonl line (its group id) or a samples.jsonl line (its trajectory id). */
export const groupKeyOf = (r: Record<string, unknown>): string | undefined => {
  const id = (r.group_overrides as { group_id?: unknown } | undefined)?.group_id;
  return typeof id === "string" ? `group ${id}` : undefined;
};
export const sampleKeyOf = (r: Record<string, unknown>): string | undefined =>
  typeof r.trajectory_id === "string" ? `trajectory ${r.trajectory_id}` : undefined;
