import { splitDiff } from "../text/diff.js";
import type { ReachHit } from "./switched-off.js";

/**
 * The in-file half of a C build's reach, from the compiler itself (issue 42): which lines of each
 * workspace file the preprocessor kept. Regexes over added `#if` lines knew `0` and `false`; the
 * compiler knows every macro, `defined()`, arithmetic and include guard. During the build, a shim
 * first on `PATH` (`cc`, `gcc`, `c++`, `g++`) runs the real compiler with the build's own
 * arguments, then once more with them as `-E -fdirectives-only -C` (conditionals evaluated, macros
 * not expanded, comments kept: every kept source line comes out verbatim, on its own line) and
 * records, from the line markers, each workspace file's non-blank output lines. The host reads that
 * list back (pure): an added line of a file the compiler read that is not among them was skipped
 * by the preprocessor — not compiled. A compiler the build calls by absolute path, or one without
 * `-fdirectives-only` (clang), leaves no record: then the file is judged by the regexes alone.
 */

/** The line after which the C probe prints the kept lines (`path<TAB>line`, absolute paths). */
export const C_KEPT_MARK = "#flakegym-c-kept-lines";

/** The compilers the shim stands in for. */
const SHIMMED = ["cc", "gcc", "c++", "g++"] as const;

/** Line markers to (absolute) path and line, each non-blank line of a file under `$R` printed. */
const REDUCER = [
  'BEGIN { f = "" }',
  '/^# [0-9]+ "/ { n = $2 + 0; f = $0; sub(/^# [0-9]+ "/, "", f); sub(/"[ 0-9]*$/, "", f);',
  '  if (substr(f, 1, 1) == "<") f = ""; else if (substr(f, 1, 1) != "/") f = c "/" f;',
  '  if (index(f, r "/") != 1) f = ""; next }',
  '{ if (f != "" && $0 ~ /[^ \\t\\r]/) print f "\\t" n; n++ }',
].join("\n");

/**
 * The shim (one POSIX sh script, every name a link to it). It finds the real compiler on `PATH`
 * without its own dir, runs it, and on success preprocesses the same inputs again (dependency and
 * output flags dropped) into `$FLAKEGYM_REACH/kept.<pid>`; its exit status is the real compile's.
 */
export const C_SHIM = [
  "#!/bin/sh",
  "# flakegym reach shim (packages/runner/src/scoring/c-kept-lines.ts)",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions
  'd=${0%/*}; me=${0##*/}; P=; o=$IFS; IFS=:; for x in $PATH; do [ "$x" = "$d" ] || P="${P:+$P:}$x"; done; IFS=$o',
  'real=$(PATH=$P command -v "$me") || { echo "flakegym reach shim: no $me on PATH" >&2; exit 127; }',
  'PATH=$P "$real" "$@" || exit $?',
  "src=0; for a do case $a in *.c|*.cc|*.cpp|*.cxx|*.C) src=1 ;; esac; done",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
  '[ "$src" -eq 1 ] && [ -n "${FLAKEGYM_REACH:-}" ] || exit 0',
  "first=1; skip=0",
  "for a do",
  '  [ "$first" -eq 1 ] && { set --; first=0; }',
  '  if [ "$skip" -eq 1 ]; then skip=0; continue; fi',
  "  case $a in",
  "    -o|-MF|-MT|-MQ) skip=1; continue ;;",
  "    -c|-S|-M|-MM|-MD|-MMD|-MG|-MP|-o?*|-MF?*|-MT?*|-MQ?*|*.a|*.o|*.so|-l*|-Wl,*) continue ;;",
  "  esac",
  '  set -- "$@" "$a"',
  "done",
  'k="$FLAKEGYM_REACH/kept.$$"',
  'if (unset DEPENDENCIES_OUTPUT SUNPRO_DEPENDENCIES; PATH=$P "$real" "$@" -E -fdirectives-only -C -o "$k.i") 2>/dev/null; then',
  `  awk -v r="$FLAKEGYM_ROOT" -v c="$PWD" '${REDUCER}' "$k.i" > "$k" 2>/dev/null || rm -f "$k"`,
  "fi",
  'rm -f "$k.i"',
  "exit 0",
  "",
].join("\n");

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** Shell, run in the build's subshell before it: the shim installed first on `PATH`. */
export const C_SHIM_SETUP = [
  'mkdir -p "$FLAKEGYM_REACH/bin"',
  `printf '%s' ${q(C_SHIM)} > "$FLAKEGYM_REACH/bin/cc"`,
  'chmod 0755 "$FLAKEGYM_REACH/bin/cc"',
  ...SHIMMED.filter((n) => n !== "cc").map((n) => `ln -s cc "$FLAKEGYM_REACH/bin/${n}"`),
  'FLAKEGYM_ROOT="$PWD"; PATH="$FLAKEGYM_REACH/bin:$PATH"; export FLAKEGYM_ROOT PATH',
].join("; ");

/** Shell for the probe's list: the marker, then every record the shims wrote. */
export const C_KEPT_LIST = `printf '\\n%s\\n' '${C_KEPT_MARK}'; cat "$FLAKEGYM_REACH"/kept.* 2>/dev/null; true`;

/**
 * The kept lines per workspace-relative path from the probe's section after {@link C_KEPT_MARK}
 * (`root`: the workspace root the probe printed). Pure.
 */
export function parseKeptLines(section: string, root: string): Map<string, Set<number>> {
  const kept = new Map<string, Set<number>>();
  for (const l of section.split("\n")) {
    const m = /^(\/[^\t]*)\t(\d+)$/.exec(l);
    if (!m || !m[1]!.startsWith(`${root}/`)) continue;
    const rel = normalisePath(m[1]!.slice(root.length + 1));
    if (!kept.has(rel)) kept.set(rel, new Set());
    kept.get(rel)!.add(Number(m[2]));
  }
  return kept;
}

/** `a/./b/../c` → `a/c`. Pure. */
function normalisePath(p: string): string {
  const out: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "." || seg === "") continue;
    if (seg === ".." && out.length) out.pop();
    else out.push(seg);
  }
  return out.join("/");
}

const C_FILE = /\.(c|cc|cpp|cxx|h|hh|hpp|hxx)$/;

/** Each new-file line a C file's hunks show (added and context), by line number. Pure. */
function newLines(text: string): Map<number, { text: string; added: boolean }> {
  const out = new Map<number, { text: string; added: boolean }>();
  let n = 0;
  for (const l of text.split("\n")) {
    const h = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(l);
    if (h) n = Number(h[1]);
    else if (n > 0 && l.startsWith("+") && !l.startsWith("+++"))
      out.set(n++, { text: l.slice(1), added: true });
    else if (n > 0 && l.startsWith(" ")) out.set(n++, { text: l.slice(1), added: false });
  }
  return out;
}

/** Whether an added line is nothing the compiler compiles on its own: blank, a directive, or a directive's continuation. */
function notCode(lines: Map<number, { text: string }>, n: number): boolean {
  const t = lines.get(n)!.text.trim();
  if (t === "" || t.startsWith("#")) return true;
  // a continuation: of a directive (the preprocessor joins it onto the directive's line), or of a
  // line the hunk does not show (unknown: given the benefit of the doubt)
  for (let k = n - 1; k > 0; k--) {
    const prev = lines.get(k);
    if (prev === undefined) return true;
    if (!prev.text.endsWith("\\")) return false;
    if (prev.text.trim().startsWith("#")) return true;
  }
  return false;
}

/**
 * The added lines of `diff`'s C files the preprocessor skipped, per `kept` (files it never read are
 * left to the file-level reach), and every added line directive (`#line`, `# 12 "f"`): it rewrites
 * the markers this reading relies on. Pure.
 */
export function droppedCLines(diff: string, kept: ReadonlyMap<string, ReadonlySet<number>>): ReachHit[] {
  const hits: ReachHit[] = [];
  for (const f of splitDiff(diff)) {
    if (f.newPath === undefined || !C_FILE.test(f.newPath)) continue;
    const lines = newLines(f.text);
    const read = kept.get(f.newPath);
    for (const [n, l] of lines) {
      if (!l.added) continue;
      const text = l.text.length > 160 ? `${l.text.slice(0, 157)}...` : l.text;
      if (/^\s*#\s*(line\b|\d)/.test(l.text))
        hits.push({
          term: "build",
          file: f.newPath,
          line: n,
          why: "adds a line directive: what the compiler reports of the lines it compiled cannot be read",
          text,
        });
      else if (read !== undefined && !read.has(n) && !notCode(lines, n))
        hits.push({
          term: "build",
          file: f.newPath,
          line: n,
          why: "the compiler's preprocessor skipped it (an inactive #if/#ifdef branch): it is not compiled",
          text,
        });
    }
  }
  return hits;
}
