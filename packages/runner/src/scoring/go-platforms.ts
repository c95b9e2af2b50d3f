import { changedLinesByFile } from "../text/diff.js";
import type { ReachHit } from "./switched-off.js";

/**
 * Go source files the build on this platform did not compile, judged by the toolchain (issue 42):
 * instead of reading a file's name (`x_windows.go`) or its `//go:build` line, the reach probe asks
 * `go list` under every GOOS/GOARCH `go tool dist list` knows whether it builds the file, and
 * compiles the file's package for the first platform that does (`CGO_ENABLED=0 go build`, a cross
 * build: no foreign toolchain needed). A changed file no platform builds, or whose package fails to
 * compile there with an error in that file, costs the build term; one that compiles there is
 * vouched for by that build. The probe runs this only for changed files the host's `go list` left
 * out (rare for an honest change). File names come from the diff and are quoted into the shell;
 * the host reads back only lines naming those files.
 */

/** The line after which the go probe prints its per-file platform verdicts. */
export const GO_PLATFORMS_MARK = "#flakegym-go-platforms";

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The non-test Go files `diff` adds or changes (plain names only: no quote, newline or control character). Pure. */
export function changedGoSources(diff: string): string[] {
  return changedLinesByFile(diff)
    .map((f) => f.path)
    .filter((p) => /\.go$/.test(p) && !/_test\.go$/.test(p) && /^[\w./+@-]+$/.test(p) && !p.startsWith("-"));
}

/**
 * Shell for the probe after the host's list (`$L`: its lines, absolute paths): for each of `files`
 * the host did not list, the first platform whose `go list` does and the cross build's verdict. Pure.
 */
export function goPlatformsShell(files: readonly string[], goFilesTemplate: string): string {
  if (!files.length) return "";
  return [
    `printf '\\n%s\\n' '${GO_PLATFORMS_MARK}'`,
    "P=$(go tool dist list 2>/dev/null)",
    `for f in ${files.map(q).join(" ")}; do`,
    '  printf "%s\\n" "$L" | grep -qxF "$PWD/$f" && continue',
    '  d=$(dirname "$f"); w=',
    "  for p in $P; do",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions
    "    o=${p%/*}; a=${p#*/}",
    `    GOOS=$o GOARCH=$a go list -e -f '${goFilesTemplate}' "./$d" 2>/dev/null | grep -qxF "$PWD/$f" || continue`,
    '    w=$p; printf "platform %s %s\\n" "$f" "$p"',
    '    if GOOS=$o GOARCH=$a CGO_ENABLED=0 go build -o /dev/null "./$d" > "$FLAKEGYM_REACH/cross" 2>&1; then printf "compiles %s\\n" "$f";',
    // failed for an error in this file: its verdict; for errors elsewhere only: unjudged
    '    elif grep -qF "$f:" "$FLAKEGYM_REACH/cross"; then printf "fails %s\\n" "$f"; grep -F "$f:" "$FLAKEGYM_REACH/cross" | head -n 3 | sed "s/^/error /";',
    '    else printf "unjudged %s\\n" "$f"; fi',
    "    break",
    "  done",
    '  [ -n "$w" ] || printf "nowhere %s\\n" "$f"',
    "done",
  ].join("\n");
}

/** What the probe said of one file. */
export type GoPlatformVerdict =
  | { readonly kind: "compiles"; readonly platform: string }
  | { readonly kind: "fails"; readonly platform: string; readonly error: string }
  | { readonly kind: "nowhere" }
  /** Its package does not compile there for errors in other files: this build cannot vouch for it. */
  | { readonly kind: "unjudged"; readonly platform: string };

/** The verdicts in the probe's section after {@link GO_PLATFORMS_MARK}, per file. Pure. */
export function parseGoPlatforms(section: string): Map<string, GoPlatformVerdict> {
  const out = new Map<string, GoPlatformVerdict>();
  const platform = new Map<string, string>();
  let failing: string | undefined;
  for (const line of section.split("\n")) {
    const [word, file = "", rest = ""] = line.split(" ");
    if (word === "platform") platform.set(file, rest);
    else if (word === "compiles") out.set(file, { kind: "compiles", platform: platform.get(file) ?? "?" });
    else if (word === "nowhere") out.set(file, { kind: "nowhere" });
    else if (word === "unjudged") out.set(file, { kind: "unjudged", platform: platform.get(file) ?? "?" });
    else if (word === "fails") {
      failing = file;
      out.set(file, { kind: "fails", platform: platform.get(file) ?? "?", error: "" });
    } else if (word === "error" && failing !== undefined) {
      const v = out.get(failing);
      if (v?.kind === "fails" && !v.error) out.set(failing, { ...v, error: line.slice(6, 200) });
    }
  }
  return out;
}

/**
 * The build hit a verdict gives its file, if any: an edited file whose package does not compile
 * elsewhere for other reasons is left unjudged (as before), a new one is not vouched for. Pure.
 */
export function goPlatformHit(file: string, v: GoPlatformVerdict, isNew: boolean): ReachHit | undefined {
  if (v.kind === "compiles" || (v.kind === "unjudged" && !isNew)) return undefined;
  if (v.kind === "unjudged")
    return {
      term: "build",
      file,
      line: 0,
      why: `not compiled here, and its package does not compile for ${v.platform} (errors in other files): no build vouches for it`,
      text: "",
    };
  const why =
    v.kind === "nowhere"
      ? "no platform Go knows builds it (`go list` under each of `go tool dist list`): it is never compiled"
      : `it does not compile for ${v.platform}, the first platform that builds it (\`go build\`: ${v.error || "failed"})`;
  return { term: "build", file, line: 0, why, text: "" };
}
