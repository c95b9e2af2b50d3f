/** What a parsed JSON value is, in words for an error ("an array", "null", "number", …). Pure. */
export function jsonKindOf(v: unknown): string {
  if (v === null) return "null";
  return Array.isArray(v) ? "an array" : typeof v;
}
