/**
 * A Harbor verifier's reward.json as the eval command's judge printed it (`harbor reward.json:
 * {…}`, harbor.ts REWARD_JSON_JUDGE): every key kept, for score.json and the exports. The pass rule
 * stays the judge's (every key ≥ 1); this is the record. The last such line counts; a line that is
 * not an object of numbers is not a record. Pure.
 */
export function harborRewardsOf(output: string): Record<string, number> | undefined {
  const lines = output.split("\n").filter((l) => l.startsWith("harbor reward.json: "));
  const last = lines.at(-1);
  if (last === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(last.slice("harbor reward.json: ".length));
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 0 || !entries.every(([, x]) => typeof x === "number" && Number.isFinite(x)))
      return undefined;
    return Object.fromEntries(entries) as Record<string, number>;
  } catch {
    return undefined;
  }
}
