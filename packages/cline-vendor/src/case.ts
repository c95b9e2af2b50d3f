/**
 * The one snake_case ⇄ camelCase boundary. `@grpc/proto-loader`'s
 * `loadFileDescriptorSetFromBuffer` ignores `keepCase`, so messages on the wire use the proto
 * field names (`api_configuration`, `open_ai_base_url`); camelCase keys would be dropped silently.
 * Our TypeScript API is camelCase; the client converts requests with {@link toSnakeKeys} and
 * responses with {@link toCamelKeys}, recursively, and nowhere else.
 */

/** `openAiBaseUrl` → `open_ai_base_url`, `isR1FormatRequired` → `is_r1_format_required`. */
export function snakeCase(key: string): string {
  return memo(snakeMemo, key, (k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
}

/** `open_ai_base_url` → `openAiBaseUrl`, `is_r1_format_required` → `isR1FormatRequired`. */
export function camelCase(key: string): string {
  return memo(camelMemo, key, (k) => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()));
}

/**
 * Every message of every core's streams has its keys converted (issue 49: the largest cost of the
 * runner's loop with a thousand cores); the keys are the proto's few hundred field names, so each
 * conversion is remembered — up to a bound, for map fields whose keys are data.
 */
const MEMO_MAX = 4096;
const snakeMemo = new Map<string, string>();
const camelMemo = new Map<string, string>();

function memo(cache: Map<string, string>, key: string, convert: (k: string) => string): string {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const out = convert(key);
  if (cache.size >= MEMO_MAX) cache.clear();
  cache.set(key, out);
  return out;
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
