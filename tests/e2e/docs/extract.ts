/**
 * The runnable examples of the documentation, as data: every fenced shell, TypeScript and Python
 * block of a Markdown file, with the `docs-test` marker written just before it. Pure functions; the
 * docs test (`tests/e2e/docs.test.ts`) runs what they return.
 *
 * Markers (an HTML comment on the last non-blank line before the fence):
 *   <!-- docs-test: skip <reason> -->   not run; the test prints the reason (Nix, Nomad, a GPU, …)
 *   <!-- docs-test: exit <n> -->        every command of the block must exit with n (default 0)
 *   <!-- docs-test: exit <n1> <n2> … --> one exit code per command, in order
 *   <!-- docs-test: fixture <name> -->  a TypeScript example run inside the named fixture's prelude
 *   <!-- docs-test: heavy <reason> -->  run only by `npm run docs:heavy` (a Python with the frameworks
 *                                       the block names, minutes of work); `npm test` prints the reason
 * A block without a marker runs and must exit 0: a new example is tested unless its author says why not.
 */

/** The languages whose blocks are examples to run; other fences (json, yaml, text) are data. */
export const RUNNABLE_LANGS = {
  sh: "sh",
  bash: "sh",
  shell: "sh",
  ts: "ts",
  typescript: "ts",
  python: "python",
} as const;
export type RunnableLang = (typeof RUNNABLE_LANGS)[keyof typeof RUNNABLE_LANGS];

export type DocsMarker =
  | { readonly kind: "run"; readonly exit: number; readonly exits?: readonly number[] }
  | { readonly kind: "skip"; readonly reason: string }
  | { readonly kind: "heavy"; readonly reason: string }
  | { readonly kind: "fixture"; readonly name: string };

export interface DocBlock {
  /** The Markdown file, as given (relative to the repository root). */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: RunnableLang;
  /** The block's text without the fences, indentation of the fence removed. */
  readonly code: string;
  readonly marker: DocsMarker;
}

/** Where an example is, as a reader finds it: `docs/reference/api.md:8`. */
export const blockName = (b: Pick<DocBlock, "file" | "line">): string => `${b.file}:${b.line}`;

const FENCE = /^(\s*)(`{3,})\s*([\w-]*)\s*$/;
const MARKER = /^<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->$/;

/** Parses a `docs-test` marker comment; throws naming the file, line and the markers it knows. */
export function parseMarker(text: string, where: string): DocsMarker | undefined {
  const m = MARKER.exec(text.trim());
  if (!m) return undefined;
  const [, kind, arg = ""] = m;
  if (kind === "skip" && arg !== "") return { kind: "skip", reason: arg };
  if (kind === "heavy" && arg !== "") return { kind: "heavy", reason: arg };
  if (kind === "exit" && /^\d+$/.test(arg)) return { kind: "run", exit: Number(arg) };
  if (kind === "exit" && /^\d+( \d+)+$/.test(arg)) {
    const exits = arg.split(" ").map(Number);
    return { kind: "run", exit: exits[0]!, exits };
  }
  if (kind === "fixture" && /^[\w-]+$/.test(arg)) return { kind: "fixture", name: arg };
  throw new Error(
    `${where}: bad docs-test marker ${JSON.stringify(text.trim())}: write <!-- docs-test: skip <reason> -->, <!-- docs-test: heavy <reason> -->, <!-- docs-test: exit <n> [<n>…]  --> or <!-- docs-test: fixture <name> -->`,
  );
}

/** Every runnable fenced block of `markdown` (see the module comment for markers). */
export function extractBlocks(file: string, markdown: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent = "", ticks = "", info = ""] = open;
    const end = lines.findIndex((l, j) => j > i && l.trim() === ticks);
    const close = end === -1 ? lines.length : end;
    const lang = RUNNABLE_LANGS[info as keyof typeof RUNNABLE_LANGS];
    if (lang) {
      const code = lines
        .slice(i + 1, close)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join("\n");
      const marker = markerBefore(lines, i, `${file}:${i + 1}`) ?? { kind: "run", exit: 0 };
      blocks.push({ file, line: i + 1, lang, code, marker });
    }
    i = close;
  }
  return blocks;
}

function markerBefore(lines: readonly string[], fence: number, where: string): DocsMarker | undefined {
  for (let j = fence - 1; j >= 0; j--) {
    const l = lines[j]!.trim();
    if (l !== "") return parseMarker(l, where);
  }
  return undefined;
}

/** One shell command of a block, continuation lines joined, as a user would paste it. */
export interface DocCommand {
  /** 1-based line in the Markdown file where the command starts. */
  readonly line: number;
  readonly text: string;
}

/** A trailing comment: ` # …` after whitespace (a `#` inside a word, as in `…/v1#model`, stays). */
const TRAILING_COMMENT = /\s+#(\s.*)?$/;

/** The commands of a shell block: `\` continuations joined, comments and blank lines dropped. */
export function shellCommands(block: Pick<DocBlock, "line" | "code">): DocCommand[] {
  const out: DocCommand[] = [];
  let pending: { line: number; parts: string[] } | undefined;
  block.code.split("\n").forEach((raw, k) => {
    const line = block.line + 1 + k;
    const text = raw.replace(TRAILING_COMMENT, "").trimEnd();
    if (pending === undefined && (text.trim() === "" || text.trim().startsWith("#"))) return;
    const continued = text.endsWith("\\");
    const part = continued ? text.slice(0, -1).trim() : text.trim();
    pending ??= { line, parts: [] };
    pending.parts.push(part);
    if (!continued) {
      out.push({ line: pending.line, text: pending.parts.filter((p) => p !== "").join(" ") });
      pending = undefined;
    }
  });
  if (pending) out.push({ line: pending.line, text: pending.parts.join(" ") });
  return out;
}

/**
 * A documented command made runnable: `<name>` placeholders replaced from `values` (an unknown one
 * throws, naming it and the known ones) and optional `[--flag …]` parts dropped.
 */
export function fillPlaceholders(
  text: string,
  values: Readonly<Record<string, string>>,
  where: string,
): string {
  const withoutOptional = text.replace(/\s\[[^\]]*\]/g, "");
  return withoutOptional.replace(/<([\w-]+)>/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) {
      throw new Error(
        `${where}: no value for the placeholder <${name}> (known: ${Object.keys(values)
          .map((k) => `<${k}>`)
          .join(", ")}); add it to the docs test's fixture values or mark the block with a skip reason`,
      );
    }
    return v;
  });
}

/** Source-like paths a Markdown text names in inline backticks (fenced blocks left out). Pure. */
export function namedPaths(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "");
  return [...prose.matchAll(/`((?:[\w.@-]+\/)+[\w.-]+\.(?:ts|mjs|js|py|sh|nix|md))`/g)].map((m) => m[1]!);
}

/**
 * The first path segments that mean "a file of this repository": its top-level folders other than
 * tests/ (SWE-bench's django has one too), and every folder of a package's src/ (docs name runner
 * files as `scoring/reward.ts`). A named path starting elsewhere belongs to another project. Pure.
 */
export function ownFolders(tracked: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const t of tracked) {
    const parts = t.split("/");
    if (parts.length > 1 && parts[0] !== "tests") out.add(parts[0]!);
    const src = parts.indexOf("src");
    if (parts[0] === "packages" && src > 0 && parts.length > src + 2) out.add(parts[src + 1]!);
  }
  return out;
}

/** The relative link targets of a Markdown text (no scheme, no pure anchor), anchors dropped. Pure. */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^([a-z][\w+.-]*:|#)/i.test(t))
    .map((t) => t.split("#")[0]!);
}

/** Paths under this repository's docs/ that a text names (`docs/reference/tasks.md`, with anchors dropped). Pure. */
export function docsPathsNamed(text: string): string[] {
  return [...text.matchAll(/(?<![\w./-])docs\/[\w./-]+?\.md\b/g)].map((m) => m[0]);
}
