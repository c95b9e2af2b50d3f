/**
 * Decodes a %-escaped URL part without throwing: undefined when the escapes are malformed (a
 * dangling `%`, a cut UTF-8 sequence such as `%E0%A4%A`). Every server path or query part a
 * client sends is decoded here, so a bad escape is the client's 400, never our 500. Pure.
 */
export function decodePercent(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}
