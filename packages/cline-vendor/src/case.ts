/**
 * The one snake_case ⇄ camelCase boundary. `@grpc/proto-loader`'s
 * `loadFileDescriptorSetFromBuffer` ignores `keepCase`, so messages on the wire use the proto
 * field names (`api_configuration`, `open_ai_base_url`); camelCase keys would be dropped silently.
 * Our TypeScript API is camelCase; the client converts requests with {@link toSnakeKeys} and
 * responses with {@link toCamelKeys}, recursively, and nowhere else.
 */

/** `openAiBaseUrl` → `open_ai_base_url`, `isR1FormatRequired` → `is_r1_format_required`. */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** `open_ai_base_url` → `openAiBaseUrl`, `is_r1_format_required` → `isR1FormatRequired`. */
export function camelCase(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object") return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function convertKeys(value: unknown, convert: (k: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => convertKeys(v, convert));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[convert(k)] = convertKeys(v, convert);
  return out;
}

/** Deep-converts every plain-object key to snake_case (arrays walked, Buffers and class instances kept). */
export function toSnakeKeys(value: unknown): unknown {
  return convertKeys(value, snakeCase);
}

/** Deep-converts every plain-object key to camelCase (arrays walked, Buffers and class instances kept). */
export function toCamelKeys(value: unknown): unknown {
  return convertKeys(value, camelCase);
}
