import { changedLinesByFile } from "../text/diff.js";

/**
 * The in-file half of "a build/lint term vouches only for code the build/lint actually read"
 * (the file half is scoring/build-reach.ts): lines a diff ADDS that switch its own code off by a
 * condition that holds on no platform the build could check (`//go:build ignore`, `#[cfg(any())]`,
 * `#if 0`) cost the build and lint terms; added lint suppressions (`# noqa`, `#[allow(..)]`,
 * `eslint-disable`, `//nolint`, `@ts-expect-error`) cost the lint term. Zeroing the term is chosen over
 * deleting the suppression before the lint runs: deleting edits the agent's code (a `# noqa` inside
 * a string, a `@ts-expect-error` whose removal changes what compiles) and then judges code nobody
 * wrote. A suppression the diff only carries over (removed and added again on an edited line) is
 * not new and costs nothing. Pure: reads the diff text only, never a workspace file.
 */

/** Which term a hit costs: `build` hits cost the lint term too (the lint reads what the build reads). */
export type ReachTerm = "build" | "lint";

/** One line or file the build or lint did not read because the change said so. */
export interface ReachHit {
  readonly term: ReachTerm;
  readonly file: string;
  /** 1-based line in the new file; 0 for the whole file. */
  readonly line: number;
  readonly why: string;
  readonly text: string;
}

// --- go build constraints -------------------------------------------------------------------

/** Every GOOS and GOARCH Go knows (`go tool dist list`, plus the retired ones old files still name). */
export const GOOS =
  "aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd openbsd plan9 solaris wasip1 windows zos".split(
    " ",
  );
export const GOARCH =
  "386 amd64 amd64p32 arm arm64 arm64be armbe loong64 mips mips64 mips64le mips64p32 mips64p32le mipsle ppc ppc64 ppc64le riscv riscv64 s390 s390x sparc sparc64 wasm".split(
    " ",
  );
/** The GOOS values the `unix` constraint matches: all but these. */
const NOT_UNIX = new Set(["js", "nacl", "plan9", "wasip1", "windows", "zos"]);
/** GOOS values that imply another (go/build's rule: android builds linux files, …). */
const IMPLIES: Record<string, string> = { android: "linux", illumos: "solaris", ios: "darwin" };

/** A build-constraint expression as a tree. */
type Expr =
  | { readonly op: "tag"; readonly tag: string }
  | { readonly op: "not"; readonly x: Expr }
  | { readonly op: "and" | "or"; readonly a: Expr; readonly b: Expr };

/** Parses a `//go:build` expression; undefined when malformed (go itself then rejects the file). Pure. */
export function parseGoConstraint(src: string): Expr | undefined {
  const toks = src.match(/\(|\)|!|&&|\|\||[A-Za-z0-9_.]+|\S/g) ?? [];
  let i = 0;
  const atom = (): Expr | undefined => {
    const t = toks[i++];
    if (t === "!") {
      const x = atom();
      return x && { op: "not", x };
    }
    if (t === "(") {
      const x = or();
      return toks[i++] === ")" ? x : undefined;
    }
    return t !== undefined && /^[A-Za-z0-9_.]+$/.test(t) ? { op: "tag", tag: t } : undefined;
  };
  const chain = (op: "and" | "or", sep: string, next: () => Expr | undefined) => (): Expr | undefined => {
    let a = next();
    while (a && toks[i] === sep) {
      i++;
      const b = next();
      a = b && { op, a, b };
    }
    return a;
  };
  const and = chain("and", "&&", atom);
  const or = chain("or", "||", and);
  const e = or();
  return e && i === toks.length ? e : undefined;
}

/** A platform a Go build can check: its GOOS, GOARCH, cgo and experiment setting. */
interface GoPlatform {
  readonly goos: string;
  readonly goarch: string;
  readonly cgo: boolean;
  readonly experiments: boolean;
}

function goTag(tag: string, p: GoPlatform): boolean {
  if (tag === p.goos || tag === p.goarch || tag === IMPLIES[p.goos]) return true;
  if (tag === "unix") return !NOT_UNIX.has(p.goos);
  if (tag === "cgo") return p.cgo;
  if (tag === "gc" || /^go1\.\d+$/.test(tag)) return true;
  if (tag.startsWith("goexperiment.")) return p.experiments;
  // gccgo, ignore, never, any custom tag: set only by `-tags`, which the build does not pass
  return false;
}

function evalGo(e: Expr, p: GoPlatform): boolean {
  if (e.op === "tag") return goTag(e.tag, p);
  if (e.op === "not") return !evalGo(e.x, p);
  return e.op === "and" ? evalGo(e.a, p) && evalGo(e.b, p) : evalGo(e.a, p) || evalGo(e.b, p);
}

/** Whether a constraint holds on no platform Go knows (with or without cgo and experiments). Pure. */
export function goConstraintNeverHolds(e: Expr): boolean {
  for (const goos of GOOS)
    for (const goarch of GOARCH)
      for (const cgo of [false, true])
        for (const experiments of [false, true])
          if (evalGo(e, { goos, goarch, cgo, experiments })) return false;
  return true;
}

/** `// +build a,b !c` (space: or, comma: and) as a `//go:build` expression. Pure. */
const plusBuildToExpr = (rest: string): string =>
  rest
    .trim()
    .split(/\s+/)
    .map((opt) => `(${opt.split(",").join(" && ")})`)
    .join(" || ");

function goLineOff(text: string, _ctx: SwitchContext): string | undefined {
  const m = /^\s*\/\/go:build\s+(.*)$/.exec(text) ?? /^\s*\/\/\s*\+build\s+(.*)$/.exec(text);
  if (!m) return undefined;
  const src = text.includes("+build") ? plusBuildToExpr(m[1]!) : m[1]!;
  const e = parseGoConstraint(src.replace(/\/\/.*$/, ""));
  return e && goConstraintNeverHolds(e)
    ? `the build constraint \`${m[1]!.trim()}\` holds on no platform: go builds this file nowhere`
    : undefined;
}

// --- rust cfg predicates --------------------------------------------------------------------

/** cfg names rustc itself sets (its well-known names) or cargo sets (`feature`): they may hold. */
const RUST_CFG = new Set([
  "test",
  "debug_assertions",
  "unix",
  "windows",
  "doc",
  "doctest",
  "miri",
  "proc_macro",
  "panic",
  "feature",
  "target_os",
  "target_arch",
  "target_family",
  "target_env",
  "target_endian",
  "target_pointer_width",
  "target_vendor",
  "target_has_atomic",
  "target_feature",
  "target_abi",
  "target_thread_local",
  "overflow_checks",
  "relocation_model",
  "sanitize",
  "fmt_debug",
  "ub_checks",
  "contract_checks",
  "clippy",
  "rustfmt",
  "emscripten_wasm_eh",
  "reliable_f16",
  "reliable_f128",
]);

/** Three-valued: the predicate holds everywhere, nowhere, or depends on the platform / features. */
type Tri = "true" | "false" | "maybe";

/** The balanced `( … )` at `open` in `s` (exclusive), or undefined when it does not close there. */
function balanced(s: string, open: number): string | undefined {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === "(") depth++;
    else if (s[i] === ")" && --depth === 0) return s.slice(open + 1, i);
  }
  return undefined;
}

/** Splits a predicate list on its top-level commas. */
function topLevel(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const c of list) {
    if (c === "(") depth++;
    if (c === ")") depth--;
    if (c === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  if (cur.trim() !== "") out.push(cur);
  return out.map((p) => p.trim());
}

/** What the build said about itself that the in-file rules use (none: they judge the diff alone). */
export interface SwitchContext {
  /** The features the crates declare (`cargo metadata`): `feature = "x"` for any other never holds. */
  readonly rustFeatures?: ReadonlySet<string>;
  /**
   * The cfg sets rustc prints (`rustc --print cfg`) for the build's own target and a spread of others
   * (scoring/build-reach.ts), each entry `name` or `name="value"`: a predicate false on every one of
   * them — `all(unix, windows)`, `all(target_os = "linux", target_os = "macos")` — holds on no
   * platform, by the compiler's own word. Absent: names alone decide.
   */
  readonly rustPlatforms?: readonly ReadonlySet<string>[];
}

/** One `name` or `name = "value"` atom, as rustc prints it (`name="value"`). */
const cfgAtom = (p: string) => p.replace(/\s*=\s*/, "=");

/**
 * A predicate on one platform's printed cfg set: an atom the set holds is true; one some printed
 * platform holds but this one does not is false here; a name rustc sets per build rather than per
 * target (`test`, `debug_assertions`, a declared feature) or a value no printed platform has stays
 * open. Pure.
 */
function onPlatform(
  p: string,
  platform: ReadonlySet<string>,
  seen: ReadonlySet<string>,
  features?: ReadonlySet<string>,
): Tri {
  const call = /^(any|all|not)\s*\(/.exec(p);
  if (call) {
    const inner = balanced(p, call[0].length - 1);
    const args =
      inner === undefined ? [] : topLevel(inner).map((a) => onPlatform(a, platform, seen, features));
    return combineTri(call[1] as "any" | "all" | "not", args);
  }
  const atom = cfgAtom(p);
  if (platform.has(atom)) return "true";
  if (seen.has(atom)) return "false";
  return rustCfg(p, features);
}

/** `any`/`all`/`not` of three-valued arguments. Pure. */
function combineTri(op: "any" | "all" | "not", args: readonly Tri[]): Tri {
  if (op === "not") return args[0] === "true" ? "false" : args[0] === "false" ? "true" : "maybe";
  const [win, lose] = op === "any" ? (["true", "false"] as const) : (["false", "true"] as const);
  if (args.includes(win)) return win;
  return args.every((a) => a === lose) ? lose : "maybe";
}

/**
 * Evaluates a `cfg(…)` predicate: a name rustc and cargo never set (`FALSE`), or a feature no
 * crate declares (when `features` are known), never holds; with `platforms` (rustc's printed cfg
 * sets), neither does a predicate false on every platform. Pure.
 */
export function rustCfg(
  pred: string,
  features?: ReadonlySet<string>,
  platforms?: readonly ReadonlySet<string>[],
): Tri {
  const p = pred.trim();
  if (platforms?.length) {
    const seen = new Set(platforms.flatMap((s) => [...s]));
    const each = platforms.map((s) => onPlatform(p, s, seen, features));
    return each.every((t) => t === "false") ? "false" : each.every((t) => t === "true") ? "true" : "maybe";
  }
  const call = /^(any|all|not)\s*\(/.exec(p);
  if (call) {
    const inner = balanced(p, call[0].length - 1);
    const args = inner === undefined ? [] : topLevel(inner).map((a) => rustCfg(a, features));
    return combineTri(call[1] as "any" | "all" | "not", args);
  }
  const feature = /^feature\s*=\s*"([^"]*)"$/.exec(p)?.[1];
  if (feature !== undefined && features !== undefined) return features.has(feature) ? "maybe" : "false";
  const name = /^([A-Za-z_][A-Za-z0-9_]*)/.exec(p)?.[1];
  return name !== undefined && RUST_CFG.has(name) ? "maybe" : "false";
}

function rustLineOff(text: string, ctx: SwitchContext): string | undefined {
  const m = /#!?\[\s*cfg\s*\(/.exec(text);
  if (!m) return undefined;
  const pred = balanced(text, m.index + m[0].length - 1);
  if (pred === undefined || rustCfg(pred, ctx.rustFeatures, ctx.rustPlatforms) !== "false") return undefined;
  return ctx.rustPlatforms?.length
    ? `\`cfg(${pred.trim()})\` holds on none of the ${ctx.rustPlatforms.length} platforms rustc printed the cfgs of (nor for any name rustc or cargo sets): the code under it is not compiled`
    : `\`cfg(${pred.trim()})\` holds in no build (rustc and cargo never set it, or no crate declares the feature): the code under it is not compiled`;
}

// --- the C preprocessor ---------------------------------------------------------------------

function cLineOff(text: string, _ctx: SwitchContext): string | undefined {
  const m = /^\s*#\s*(if|elif)\b(.*)$/.exec(text);
  if (!m) return undefined;
  const cond = m[2]!
    .replace(/\/\*.*?\*\//g, "")
    .replace(/\/\/.*$/, "")
    .trim();
  const never =
    /^\(*\s*(0+|0[xX]0+|0[uUlL]*|false|FALSE)\s*\)*$/.test(cond) ||
    /^\(*\s*(0|false|FALSE)\s*&&/.test(cond) ||
    /&&\s*\(*\s*(0|false|FALSE)\s*\)*$/.test(cond) ||
    /^!\s*\(*\s*1\s*\)*$/.test(cond);
  return never ? `\`#${m[1]} ${cond}\` is never true: the code under it is not compiled` : undefined;
}

// --- per language ---------------------------------------------------------------------------

interface Family {
  readonly ext: RegExp;
  /** An added line that switches code off from the build (and the lint with it). */
  readonly off?: (text: string, ctx: SwitchContext) => string | undefined;
  /** Added lint suppressions, each with the term it costs. */
  readonly suppressions: readonly { readonly re: RegExp; readonly term: ReachTerm; readonly what: string }[];
}

/** rustc lints that deny by default: allowing one makes code compile that otherwise would not. */
const RUST_DENY_BY_DEFAULT =
  /\b(arithmetic_overflow|unconditional_panic|overflowing_literals|invalid_value|mutable_transmutes|no_mangle_const_items|invalid_atomic_ordering|invalid_reference_casting|let_underscore_lock|long_running_const_eval|named_asm_labels|enum_intrinsics_non_enums|undropped_manually_drops|useless_deprecated|invalid_from_utf8_unchecked|unknown_crate_types|warnings)\b/;

const TS_CHECK = (term: ReachTerm): Family["suppressions"][number] => ({
  re: /(\/\/|\/\*+|^\s*\*)\s*@ts-(nocheck|ignore|expect-error)\b/,
  term,
  what: "a TypeScript check suppression",
});
const JS_LINT: Family["suppressions"][number] = {
  re: /(\/\/|\/\*+)\s*(eslint-disable|biome-ignore|jshint\s+ignore|oxlint-disable)/,
  term: "lint",
  what: "a linter suppression",
};

const FAMILIES: readonly Family[] = [
  {
    ext: /\.go$/,
    off: goLineOff,
    suppressions: [
      { re: /\/\/\s*nolint\b|\/\/lint:(file-)?ignore\b/, term: "lint", what: "a linter suppression" },
    ],
  },
  {
    ext: /\.rs$/,
    off: rustLineOff,
    suppressions: [
      {
        re: new RegExp(`#!?\\[\\s*(allow|expect)\\s*\\([^\\]]*${RUST_DENY_BY_DEFAULT.source}`),
        term: "build",
        what: "an allowed deny-by-default rustc lint (code that fails to compile without it)",
      },
      {
        re: /#!?\[\s*(allow|expect)\s*\(|#!?\[\s*cfg_attr\s*\(.*\b(allow|expect)\s*\(/,
        term: "lint",
        what: "a lint suppression (`allow`/`expect`)",
      },
    ],
  },
  {
    ext: /\.(c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|ipp|inl)$/,
    off: cLineOff,
    suppressions: [
      {
        re: /\bNOLINT(NEXTLINE|BEGIN)?\b|#\s*pragma\s+(GCC|clang)\s+diagnostic\s+ignored|#\s*pragma\s+warning\s*\(\s*disable/,
        term: "lint",
        what: "a compiler/linter warning suppression",
      },
    ],
  },
  // TypeScript: tsc is the build, so its suppressions cost the build term
  { ext: /\.(ts|tsx|mts|cts)$/, suppressions: [TS_CHECK("build"), JS_LINT] },
  // JavaScript: tsc reads it only with checkJs (then as a linter); `node --check` ignores it
  { ext: /\.(js|mjs|cjs|jsx)$/, suppressions: [TS_CHECK("lint"), JS_LINT] },
  {
    ext: /\.(py|pyi|pyw)$/,
    suppressions: [
      {
        re: /#\s*(noqa\b|type:\s*ignore\b|pylint:\s*disable|pyright:\s*(ignore|basic)|mypy:\s*ignore-errors|(flake8|ruff):\s*noqa)/,
        term: "lint",
        what: "a linter or type-checker suppression",
      },
    ],
  },
];

const clipText = (s: string) => (s.length > 160 ? `${s.slice(0, 157)}...` : s);

/** The suppressions the file's added lines bring beyond those its removed lines took away. */
function newSuppressions(
  fam: Family,
  path: string,
  added: readonly { line: number; text: string }[],
  removed: readonly string[],
): ReachHit[] {
  const hits: ReachHit[] = [];
  for (const s of fam.suppressions) {
    const carried = removed.filter((t) => s.re.test(t)).length;
    const lines = added.filter((l) => s.re.test(l.text));
    for (const l of lines.slice(carried))
      hits.push({ term: s.term, file: path, line: l.line, why: `adds ${s.what}`, text: clipText(l.text) });
  }
  return hits;
}

/** Directories whose files are tests, fixtures or documentation: no build vouches for them. */
const EXEMPT_DIR = /^(tests?|__tests__|specs?|testdata|testing|fixtures?|__fixtures__|__mocks__|docs?)$/;
const TEST_FILE = /^test_.*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|^conftest\.py$/;

/**
 * Whether `path` is a test, fixture or documentation file, which no build term judges (a
 * `//go:build integration` test file is honest); a lint still reads it, so its suppressions count. Pure.
 */
export function isTestOrDocPath(path: string): boolean {
  const parts = path.split("/");
  const base = parts.pop()!;
  return TEST_FILE.test(base) || parts.some((d) => EXEMPT_DIR.test(d));
}

/** Every line of `diff` that switches its own code off from the build or silences the lint. Pure. */
export function switchedOffLines(diff: string, ctx: SwitchContext = {}): ReachHit[] {
  const hits: ReachHit[] = [];
  for (const f of changedLinesByFile(diff)) {
    const found = FAMILIES.find((x) => x.ext.test(f.path));
    if (!found) continue;
    const fam: Family = isTestOrDocPath(f.path) ? { ...found, off: undefined } : found;
    // a switch the diff only carries over (an edited line that had it before) is not new
    let carried = fam.off ? f.removed.filter((t) => fam.off!(t, ctx) !== undefined).length : 0;
    for (const l of f.added) {
      const why = fam.off?.(l.text, ctx);
      if (why && carried-- <= 0)
        hits.push({ term: "build", file: f.path, line: l.line, why, text: clipText(l.text) });
    }
    hits.push(...newSuppressions(fam, f.path, f.added, f.removed));
  }
  // one line that is both (an allow of a deny-by-default lint) counts once, for its build term
  const seen = new Set<string>();
  return hits.filter((h) => {
    const k = `${h.file}:${h.line}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
