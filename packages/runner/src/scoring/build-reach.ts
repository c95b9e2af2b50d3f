import type { ProfileId } from "@flakegym/profiles";
import { NODE_CHECKED_FIND, PYTHON_BUILD_EXCLUDE } from "../tasks/row-reward.js";
import { changedLinesByFile } from "../text/diff.js";
import { C_KEPT_LIST, C_KEPT_MARK, C_SHIM_SETUP, droppedCLines, parseKeptLines } from "./c-kept-lines.js";
import {
  changedGoSources,
  GO_PLATFORMS_MARK,
  type GoPlatformVerdict,
  goPlatformHit,
  goPlatformsShell,
  parseGoPlatforms,
} from "./go-platforms.js";
import type { Term } from "./reward.js";
import type { StepResult } from "./script.js";
import {
  GOARCH,
  GOOS,
  isTestOrDocPath,
  type ReachHit,
  type SwitchContext,
  switchedOffLines,
} from "./switched-off.js";

/**
 * The file half of "a build/lint term vouches only for code the build/lint actually read" (the
 * in-file half is scoring/switched-off.ts). Inside the scoring sandbox, right after the build, the
 * toolchain itself says which files the build compiled (`go list`, rustc's dep-info, the C
 * compiler's dependency output, `tsc --listFilesOnly`, the `find` the node check walks); every
 * source file the diff adds or changes that is not among them — a Rust file no `mod` declares, a C
 * file the Makefile does not list, a `_windows.go` file, an `.mjs` file — costs the build and lint
 * terms. No host tool reads a workspace file: the host only compares path lists. Pure.
 */

/** What the scoring script does around a build to learn which files it compiled. */
export interface ReachProbe {
  /** Variables set for the build step, each to a file in the probe's dir (its `$FLAKEGYM_REACH`). */
  readonly buildEnv?: Readonly<Record<string, string>>;
  /** Shell run in the build's subshell just before it, `$FLAKEGYM_REACH` set (C: the compiler shim). */
  readonly setup?: string;
  /**
   * Shell run after the build with `$FLAKEGYM_REACH` (a dir holding `mark`, touched just before the
   * build): prints the workspace root, then the paths the build compiled (whitespace-separated;
   * make-style dependency lines allowed).
   */
  readonly list: string;
}

const ROOT = `printf '%s\\n' "$PWD"; `;
/** The line after which the rust probe prints `cargo metadata` (the crates' declared features). */
const CARGO_METADATA = "#flakegym-cargo-metadata";
/** The line after which the rust probe prints rustc's cfg sets, each closed by {@link CFG_END}. */
const RUSTC_CFG = "#flakegym-rustc-cfg";
const CFG_END = "#flakegym-cfg-end";
/**
 * Targets whose cfgs rustc prints beside the build's own (`rustc --print cfg --target …`, no std
 * needed): one per distinct OS identity (`unix`, `windows`, `target_family`, `target_os`) among
 * every target rustc 1.95 knows (`rustc --print target-list`, 320; the check:
 * tests/integration/scoring/rust-cfg-targets.test.ts, `npm run test:rust-cfg-targets`). A predicate false on all of them
 * (`all(unix, windows)`) holds on no platform.
 */
export const CFG_TARGETS = [
  "wasm32-unknown-emscripten",
  "wasm32-wali-linux-musl",
  "powerpc64-ibm-aix",
  "aarch64-linux-android",
  "x86_64-pc-cygwin",
  "x86_64-unknown-dragonfly",
  "riscv32imac-esp-espidf",
  "aarch64-unknown-freebsd",
  "aarch64-unknown-fuchsia",
  "i686-unknown-haiku",
  "armv6k-nintendo-3ds",
  "i686-unknown-hurd-gnu",
  "aarch64-unknown-illumos",
  "aarch64-apple-ios",
  "x86_64-unknown-l4re-uclibc",
  "aarch64-unknown-linux-gnu",
  "x86_64-lynx-lynxos178",
  "aarch64-apple-darwin",
  "aarch64-unknown-managarm-mlibc",
  "aarch64-unknown-netbsd",
  "aarch64-unknown-nto-qnx700",
  "aarch64-unknown-nuttx",
  "aarch64-unknown-openbsd",
  "hexagon-unknown-qurt",
  "aarch64-unknown-redox",
  "armv7-rtems-eabihf",
  "sparcv9-sun-solaris",
  "aarch64-apple-tvos",
  "aarch64-apple-visionos",
  "armv7-sony-vita-newlibeabihf",
  "aarch64-wrs-vxworks",
  "aarch64-apple-watchos",
  "wasm32v1-none",
  "wasm32-unknown-unknown",
  "wasm32-wasip1",
  "aarch64-pc-windows-gnullvm",
  "amdgcn-amd-amdhsa",
  "nvptx64-nvidia-cuda",
  "aarch64-unknown-helenos",
  "aarch64-unknown-hermit",
  "aarch64-nintendo-switch-freestanding",
  "x86_64-unknown-motor",
  "aarch64-unknown-none",
  "mipsel-sony-psp",
  "mipsel-sony-psx",
  "aarch64-kmc-solid_asp3",
  "aarch64-unknown-teeos",
  "aarch64-unknown-trusty",
  "aarch64-unknown-uefi",
  "x86_64-fortanix-unknown-sgx",
  "armv7a-vex-v5",
  "riscv32imac-unknown-xous-elf",
  "riscv32im-risc0-zkvm-elf",
] as const;
const RUSTC_CFG_LIST = [
  `printf '\\n%s\\n' '${RUSTC_CFG}'`,
  // the toolchain's rustc itself (not a rustup proxy per call)
  `r=$(rustc --print sysroot)/bin/rustc && { "$r" --print cfg; echo '${CFG_END}'; }`,
  `for t in ${CFG_TARGETS.join(" ")}; do "$r" --print cfg --target "$t" 2>/dev/null && echo '${CFG_END}'; done`,
].join(" && ");
const GO_FILES = ["GoFiles", "CgoFiles", "TestGoFiles", "XTestGoFiles"]
  .map((f) => `{{range .${f}}}{{$d}}/{{.}}{{"\\n"}}{{end}}`)
  .join("");

/** Each profile's probe (python needs none: compileall compiles every `.py` it does not exclude). */
const PROBES: Partial<Record<ProfileId, ReachProbe>> = {
  // the host's list in $L first: the platform check (go-platforms.ts) reads it
  go: { list: `L=$(go list -e -f '{{$d := .Dir}}${GO_FILES}' ./...); ${ROOT}printf '%s\\n' "$L"` },
  rust: {
    list: `${ROOT}find "\${CARGO_TARGET_DIR:-target}" -path '*/deps/*.d' -type f -newer "$FLAKEGYM_REACH/mark" -exec cat {} + && printf '\\n%s\\n' '${CARGO_METADATA}' && { cargo metadata --no-deps --offline --format-version 1 2>/dev/null || true; }`,
  },
  // gcc appends each compile's dependencies to DEPENDENCIES_OUTPUT, unless the build passes -MD/-MMD
  // itself (CMake, autotools) or uses clang: then the compiler's own dependency files, written by
  // this build (newer than the mark: none the diff brought), say it
  // and the compiler's preprocessor says which lines of each file it kept (scoring/c-kept-lines.ts)
  c: {
    buildEnv: { DEPENDENCIES_OUTPUT: "deps" },
    setup: C_SHIM_SETUP,
    list: `${ROOT}cat "$FLAKEGYM_REACH/deps" 2>/dev/null; find . -type f \\( -name '*.d' -o -name '*.Po' -o -name '*.Plo' \\) -newer "$FLAKEGYM_REACH/mark" -exec cat {} + 2>/dev/null; ${C_KEPT_LIST}`,
  },
  node: {
    list: `${ROOT}if [ -f tsconfig.json ]; then npx --no-install tsc --listFilesOnly; else ${NODE_CHECKED_FIND} -print; fi`,
  },
};

/** A line a diff adds that switches Rust code by a `cfg` predicate. */
const ADDS_CFG = /^\+.*#!?\[\s*cfg\s*\(/m;

/**
 * The probe of `profile`'s default build, if it needs one. Rust's prints rustc's cfg sets too when
 * `diff` adds a `cfg` predicate (about 0.8 CPU s for the 54 targets: paid only then). Pure.
 */
export function reachProbeOf(profile: ProfileId, diff = ""): ReachProbe | undefined {
  const probe = PROBES[profile];
  const goFiles = profile === "go" && probe ? changedGoSources(diff) : [];
  if (goFiles.length && probe)
    return { ...probe, list: `${probe.list}; ${goPlatformsShell(goFiles, `{{$d := .Dir}}${GO_FILES}`)}` };
  if (profile !== "rust" || !probe || !ADDS_CFG.test(diff)) return probe;
  return { ...probe, list: `${probe.list} && { ${RUSTC_CFG_LIST}; true; }` };
}

/** What counts as a source file of each profile (everything else — docs, data, configs — is not judged here). */
const SOURCES: Partial<Record<ProfileId, RegExp>> = {
  go: /\.go$/,
  rust: /\.rs$/,
  c: /\.(c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx)$/,
  node: /\.(js|mjs|cjs|jsx|ts|tsx|mts|cts)$/,
  python: /\.py$/,
};

/** Whether `path` is a source file of `profile` the build must have compiled. Pure. */
export function isBuiltSource(profile: ProfileId, path: string): boolean {
  const re = SOURCES[profile];
  if (!re?.test(path)) return false;
  return !isTestOrDocPath(path);
}

/** A Go file named for another platform than this build's (`x_windows.go`, `x_darwin_arm64.go`). */
const OTHER_PLATFORM_GO = new RegExp(
  `_(${[...GOOS, ...GOARCH].filter((p) => p !== "linux" && p !== "amd64").join("|")})(_\\w+)?\\.go$`,
);

/** Normalises a probe's path (`./a/../b` → `b`; the root stripped). */
function normalise(p: string, root: string): string {
  const rel = root && p.startsWith(`${root}/`) ? p.slice(root.length + 1) : p;
  const out: string[] = [];
  for (const seg of rel.split("/")) {
    if (seg === "." || seg === "") continue;
    if (seg === ".." && out.length && out.at(-1) !== "..") out.pop();
    else out.push(seg);
  }
  return (rel.startsWith("/") ? "/" : "") + out.join("/");
}

/** What a probe printed: the paths the build read, and (rust) the features its crates declare. */
export interface Reach {
  readonly files: ReadonlySet<string>;
  readonly rustFeatures?: ReadonlySet<string>;
  /** rustc's printed cfg sets, their OS identity only (`unix`, `windows`, `target_family`, `target_os`). */
  readonly rustPlatforms?: readonly ReadonlySet<string>[];
  /** C: the lines of each workspace file the compiler's preprocessor kept (scoring/c-kept-lines.ts). */
  readonly cKept?: ReadonlyMap<string, ReadonlySet<number>>;
  /** Go: for changed files the host's build left out, what the other platforms said (scoring/go-platforms.ts). */
  readonly goPlatforms?: ReadonlyMap<string, GoPlatformVerdict>;
}

/**
 * rustc's printed cfg sets (`name` / `name="value"` lines, each set closed by its end line), kept to
 * the OS identity (`unix`, `windows`, `target_family`, `target_os`): the sampled targets cover every
 * OS identity, not every architecture, feature or build flag (`target_arch`, `debug_assertions`,
 * `panic`… stay open). Pure.
 */
export function parseRustcCfg(text: string): ReadonlySet<string>[] {
  return text
    .split(`${CFG_END}\n`)
    .slice(0, -1)
    .map(
      (block) =>
        new Set(
          block
            .split("\n")
            .map((l) => l.trim())
            .filter((l) => /^(unix|windows|target_(os|family)=".*")$/.test(l)),
        ),
    )
    .filter((s) => s.size > 0);
}

/** The features `cargo metadata` JSON declares, or undefined when it is not that JSON. */
function cargoFeatures(json: string): Set<string> | undefined {
  try {
    const m = JSON.parse(json) as { packages?: { features?: Record<string, unknown> }[] };
    if (!Array.isArray(m.packages)) return undefined;
    return new Set(m.packages.flatMap((p) => Object.keys(p.features ?? {})));
  } catch {
    return undefined;
  }
}

/**
 * A probe's output: its first line the root, then paths (make-style `target:` words dropped), then
 * for rust `cargo metadata` after its marker line. Pure.
 */
export function parseReach(printed: string): Reach {
  const goAt = printed.indexOf(`\n${GO_PLATFORMS_MARK}\n`);
  const goPlatforms =
    goAt < 0 ? undefined : parseGoPlatforms(printed.slice(goAt + GO_PLATFORMS_MARK.length + 2));
  const probed = goAt < 0 ? printed : printed.slice(0, goAt);
  const keptAt = probed.indexOf(`\n${C_KEPT_MARK}\n`);
  const whole = keptAt < 0 ? probed : probed.slice(0, keptAt);
  const cfgAt = whole.indexOf(`\n${RUSTC_CFG}\n`);
  const platforms = cfgAt < 0 ? [] : parseRustcCfg(whole.slice(cfgAt + RUSTC_CFG.length + 2));
  const output = cfgAt < 0 ? whole : whole.slice(0, cfgAt);
  const cut = output.indexOf(`\n${CARGO_METADATA}\n`);
  const paths = cut < 0 ? output : output.slice(0, cut);
  const rustFeatures = cut < 0 ? undefined : cargoFeatures(output.slice(cut + CARGO_METADATA.length + 2));
  const [root = "", ...rest] = paths.split("\n");
  const words = rest
    .join("\n")
    .replace(/\\\n/g, " ")
    .split(/\s+/)
    .filter((w) => w !== "" && !w.endsWith(":"));
  const files = new Set(words.map((w) => normalise(w, root.trim())));
  const kept =
    keptAt < 0 ? undefined : parseKeptLines(probed.slice(keptAt + C_KEPT_MARK.length + 2), root.trim());
  return {
    files,
    ...(kept ? { cKept: kept } : {}),
    ...(goPlatforms ? { goPlatforms } : {}),
    ...(rustFeatures ? { rustFeatures } : {}),
    ...(platforms.length ? { rustPlatforms: platforms } : {}),
  };
}

/** Whether the build compiled `path`: listed as is, or (a sub-make's relative entry) as its tail. */
function compiledBy(path: string, compiled: ReadonlySet<string>): boolean {
  if (compiled.has(path)) return true;
  for (const c of compiled)
    if (!c.startsWith("/") && !c.startsWith("..") && path.endsWith(`/${c}`)) return true;
  return false;
}

/** What one changed source file's place in the build is, or undefined when the build compiled it. */
function unreadReason(
  profile: ProfileId,
  f: { path: string; isNew: boolean },
  compiled: ReadonlySet<string> | undefined,
): string | undefined {
  if (profile === "python")
    return new RegExp(PYTHON_BUILD_EXCLUDE).test(`./${f.path}`)
      ? "not compiled by the build: compileall excludes its directory"
      : undefined;
  // an edit to a file only another platform builds: this build cannot vouch for it, nor is it hidden by the change
  if (profile === "go" && !f.isNew && OTHER_PLATFORM_GO.test(f.path)) return undefined;
  if (compiled === undefined) return "the build's own list of compiled files is missing";
  return compiledBy(f.path, compiled)
    ? undefined
    : `not compiled by the build: no ${profile} build target of the repository includes it`;
}

/**
 * The changed source files of `diff` the build did not compile, given what the probe printed
 * (`probe` undefined: the probe did not report; for python none is needed). Pure.
 */
export function unreadFiles(profile: ProfileId, diff: string, probe: StepResult | undefined): ReachHit[] {
  const reach = probe && probe.exitCode === 0 ? parseReach(probe.output) : undefined;
  const compiled = reach?.files;
  const hits: ReachHit[] = [];
  for (const f of changedLinesByFile(diff)) {
    // a name with a control character could forge a line of the probe's list
    const odd = [...f.path].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
    if (!odd && !isBuiltSource(profile, f.path)) continue;
    // a Go file the host left out: what the platforms that build it said (go-platforms.ts)
    const elsewhere = profile === "go" && !odd ? reach?.goPlatforms?.get(f.path) : undefined;
    if (elsewhere) {
      const hit = goPlatformHit(f.path, elsewhere, f.isNew);
      if (hit) hits.push(hit);
      continue;
    }
    const why = odd ? "its name holds a control character" : unreadReason(profile, f, compiled);
    if (why) hits.push({ term: "build", file: f.path, line: 0, why, text: "" });
  }
  return hits;
}

/** Every reason `diff` gives for a build or lint that did not read all of it (file- and line-level). Pure. */
export function reachHits(
  diff: string,
  profile: ProfileId | undefined,
  probe: StepResult | undefined,
): ReachHit[] {
  const files = profile === undefined ? [] : unreadFiles(profile, diff, probe);
  const reach = probe && probe.exitCode === 0 ? parseReach(probe.output) : undefined;
  const ctx: SwitchContext = {
    ...(reach?.rustFeatures ? { rustFeatures: reach.rustFeatures } : {}),
    ...(reach?.rustPlatforms ? { rustPlatforms: reach.rustPlatforms } : {}),
  };
  return [...files, ...switchedOffLines(diff, ctx), ...droppedCLines(diff, reach?.cKept ?? new Map())];
}

/** One hit as the term's detail tells it. */
const hitText = (h: ReachHit) => `${h.file}${h.line ? `:${h.line}` : ""} (${h.why})`;

/** The hits that cost `term` a pass: build hits cost both terms, lint hits the lint term. */
const against = (term: Term | undefined, hits: readonly ReachHit[]) =>
  term?.value === 1 ? hits.filter((h) => h.term === "build" || term.name === "lint") : [];

/** A term that passed, set to 0 with the hits named, when there are any. */
function zeroed(term: Term | undefined, hits: readonly ReachHit[]): Term | undefined {
  if (!term || !hits.length) return term;
  const list = hits.slice(0, 8).map(hitText).join("; ");
  const more = hits.length > 8 ? `; and ${hits.length - 8} more` : "";
  return {
    ...term,
    value: 0,
    detail: `${term.detail ?? ""}; not counted — the change keeps code from the ${term.name}: ${list}${more}`,
  };
}

/**
 * The build and lint terms once a change that kept some of its own code from them is taken into
 * account: a term that passed is 0 when a hit stands against it. `counted`: the hits that cost a
 * term (recorded in score.json as `build-exclusion`). Pure.
 */
export function applyReach(
  terms: { readonly build: Term | undefined; readonly lint: Term | undefined },
  hits: readonly ReachHit[],
): { build: Term | undefined; lint: Term | undefined; counted: ReachHit[] } {
  const b = against(terms.build, hits);
  const l = against(terms.lint, hits);
  return {
    build: zeroed(terms.build, b),
    lint: zeroed(terms.lint, l),
    counted: hits.filter((h) => b.includes(h) || l.includes(h)),
  };
}
