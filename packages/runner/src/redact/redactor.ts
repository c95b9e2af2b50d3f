/**
 * The one boundary secrets never cross. A {@link Redactor} holds the secret values a run knows
 * (policy API keys, the judge key, the gateway's per-trajectory tokens) and replaces each of them,
 * in every encoding that can reach a file or a socket, with `[redacted]`. flakegym has one per
 * process, {@link runSecrets}: every run-directory writer (`run-format/jsonl.ts`, the turn log, the
 * artifact scrub), the policy gateway's answers to the agent and the Atropos client pass their bytes
 * through it. Secrets are added where they are read (policy keys in `createUpstream`, the judge key
 * in the rollout wiring, tokens when the gateway registers a trajectory). See docs/reference/gateway.md.
 */

/** What a secret is replaced with. Plain ASCII with no JSON or URL meta characters. */
export const REDACTED = "[redacted]";

/** Shorter values are not treated as secrets (they would redact ordinary words). */
export const MIN_SECRET_LENGTH = 8;

/** The policy gateway's per-trajectory tokens: `fg-` and 24 random bytes in base64url. */
export const GATEWAY_TOKEN_PATTERN = /fg-[A-Za-z0-9_-]{32}/;

/**
 * The spellings of a secret that can appear in what flakegym writes or sends, longest first. Pure.
 * Raw; JSON-escaped (inside a JSON string); URL-encoded (in a query or a form body); base64 and
 * base64url of the value, of `Bearer <value>` and of `<value>:` (HTTP Basic with an empty password)
 * — base64 only where the encoding starts at the value's first byte, which is how an echoed header
 * carries it.
 */
export function secretForms(secret: string): string[] {
  if (secret.length < MIN_SECRET_LENGTH) return [];
  const b64 = (s: string) => {
    const b = Buffer.from(s, "utf8");
    const padded = b.toString("base64");
    // unpadded too: the value may go on inside a longer encoded string
    return [padded, padded.replace(/=+$/, ""), b.toString("base64url")];
  };
  const forms = new Set([
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    ...b64(secret),
    ...b64(`Bearer ${secret}`),
    ...b64(`${secret}:`),
  ]);
  return [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

export interface Redactor {
  /** Adds a secret (values shorter than {@link MIN_SECRET_LENGTH} are ignored). */
  add(secret: string | undefined): void;
  /** `text` with every form of every secret, and every pattern match, replaced by `[redacted]`. */
  text(text: string): string;
  /** The same for bytes (any content, UTF-8 or not); returns `bytes` itself when nothing matched. */
  bytes(bytes: Uint8Array): Uint8Array;
  /** Whether `text` holds any form of a secret or a pattern match. */
  finds(text: string): boolean;
  /** The secrets it holds (to hand to another thread's redactor). */
  values(): string[];
  /** How many secrets it holds. */
  readonly size: number;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** A redactor for `secrets` and for whatever matches one of `patterns` (no flags needed). */
export function createRedactor(
  opts: { readonly secrets?: Iterable<string>; readonly patterns?: readonly RegExp[] } = {},
): Redactor {
  const secrets = new Set<string>();
  const patterns = (opts.patterns ?? []).map((p) => p.source);
  const whole = patterns.map((p) => new RegExp(`^(?:${p})$`));
  // a pattern's literal start (e.g. `fg-`); a pattern without one is always tried ("" is in everything)
  const patternPrefixes = (opts.patterns ?? []).map((p) => /^[A-Za-z0-9_-]*/.exec(p.source)?.[0] ?? "");
  let compiled: { text: RegExp; latin1: RegExp; prefixes: string[]; needles: Buffer[] } | undefined;

  const matcher = () => {
    if (compiled) return compiled;
    const forms = [...secrets].flatMap(secretForms).sort((a, b) => b.length - a.length);
    // a byte matcher: the UTF-8 bytes of each form, spelled as latin1 (one char per byte)
    const latin1 = forms.map((f) => Buffer.from(f, "utf8").toString("latin1"));
    const alt = (xs: string[]) => [...xs.map(escapeRegExp), ...patterns].join("|");
    compiled = {
      text: new RegExp(alt(forms) || "(?!)", "g"),
      latin1: new RegExp(alt(latin1) || "(?!)", "g"),
      // what every match starts with: a form, or a pattern's literal prefix (cheap to rule out)
      prefixes: [...forms, ...patternPrefixes],
      needles: [...forms, ...patternPrefixes].map((f) => Buffer.from(f, "utf8")),
    };
    return compiled;
  };
  /** Whether `b` may hold a match (false: it certainly does not). */
  const mayMatch = (b: Buffer) => matcher().needles.some((n) => b.includes(n));
  const empty = () => secrets.size === 0 && patterns.length === 0;

  const r: Redactor = {
    add(secret) {
      if (secret === undefined || secret.length < MIN_SECRET_LENGTH || secrets.has(secret)) return;
      // a value a pattern covers (a gateway token) is not held: a run registers thousands of them
      if (whole.some((re) => re.test(secret))) return;
      secrets.add(secret);
      compiled = undefined;
    },
    text(text) {
      if (empty() || !matcher().prefixes.some((p) => text.includes(p))) return text;
      const re = matcher().text;
      re.lastIndex = 0;
      return text.replace(re, REDACTED);
    },
    bytes(bytes) {
      if (empty()) return bytes;
      const b = Buffer.isBuffer(bytes)
        ? bytes
        : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      if (!mayMatch(b)) return bytes;
      const s = b.toString("latin1");
      const re = matcher().latin1;
      re.lastIndex = 0;
      if (!re.test(s)) return bytes;
      re.lastIndex = 0;
      return Buffer.from(s.replace(re, REDACTED), "latin1");
    },
    finds(text) {
      if (empty()) return false;
      const re = matcher().text;
      re.lastIndex = 0;
      return re.test(text);
    },
    values() {
      return [...secrets];
    },
    get size() {
      return secrets.size;
    },
  };
  for (const s of opts.secrets ?? []) r.add(s);
  return r;
}

/**
 * The process's redactor: the secrets of the run(s) this process drives, and the gateway's token
 * pattern. Writers and senders use it; secrets are added where they are read.
 */
export const runSecrets: Redactor = createRedactor({ patterns: [GATEWAY_TOKEN_PATTERN] });
