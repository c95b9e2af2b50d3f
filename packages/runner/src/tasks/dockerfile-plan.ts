import { uvImageRequirement, uvImageSource } from "./uv-image.js";

/**
 * A Dockerfile read as a build plan for a root filesystem (dockerfile-build.ts runs it): its `FROM`,
 * then the steps `RUN`, `COPY`/`ADD` (local sources), `ENV`, `WORKDIR`, `USER`, `ARG` in order, with
 * `ENTRYPOINT`/`CMD` recorded. A line that cannot be honoured is refused by name — its line number,
 * its instruction and why — never skipped. Pure.
 */

/** One instruction: its 1-based first line, the op in capitals and its arguments (continuations joined). */
export interface DockerLine {
  readonly line: number;
  readonly op: string;
  readonly args: string;
}

export type BuildStep =
  | {
      readonly kind: "run";
      readonly line: number;
      readonly shell: string;
      /** The SHELL in force for a shell-form RUN (its argv before the command), when not `/bin/sh -c`. */
      readonly shellArgv?: readonly string[];
    }
  | {
      readonly kind: "copy";
      readonly line: number;
      readonly sources: readonly string[];
      /** Absolute container path (resolved against the WORKDIR in force). */
      readonly dest: string;
      /** The destination is a directory (ends with /, is `.`, or several sources). */
      readonly intoDir: boolean;
      readonly chown?: string;
      readonly chmod?: string;
      /** Copied from uv's image (`--from=ghcr.io/astral-sh/uv:<tag>`): the pip requirement of the wheel that serves it (uv-image.ts). */
      readonly uv?: string;
    }
  | { readonly kind: "env"; readonly line: number; readonly name: string; readonly value: string }
  | { readonly kind: "workdir"; readonly line: number; readonly path: string }
  | { readonly kind: "user"; readonly line: number; readonly user: string };

export interface BuildPlan {
  /** The FROM image as written (options and `AS name` dropped). */
  readonly image: string;
  readonly steps: readonly BuildStep[];
  /** The final WORKDIR (default /). */
  readonly workdir: string;
  /** The final USER (default root). */
  readonly user: string;
  /** The final environment the ENV lines set. */
  readonly env: Readonly<Record<string, string>>;
  /** Recorded, not run at build: the exec form as a list, a shell form as `sh -c`. */
  readonly entrypoint?: readonly string[];
  readonly cmd?: readonly string[];
}

/** A line that cannot be honoured. */
export interface Refusal {
  readonly line: number;
  readonly instruction: string;
  readonly why: string;
}

/** "line 7: COPY --from=… /uv /bin/: why". */
export function refusalText(r: Refusal): string {
  const shown = r.instruction.length > 120 ? `${r.instruction.slice(0, 117)}...` : r.instruction;
  return `line ${r.line}: ${shown}: ${r.why}`;
}

/** Dockerfile text → instructions with their first line numbers; comments and blank lines dropped. Pure. */
export function dockerLines(text: string): DockerLine[] {
  const out: DockerLine[] = [];
  let cur = "";
  let start = 0;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, "");
    if (/^\s*#/.test(line)) continue; // a comment, also inside a continued instruction
    if (cur === "" && line.trim() === "") continue;
    if (cur === "") start = i + 1;
    if (/\\\s*$/.test(line)) {
      cur += `${line.replace(/\\\s*$/, "")} `;
      continue;
    }
    cur += line;
    const m = /^\s*([A-Za-z]+)\s*([\s\S]*)$/.exec(cur);
    if (m) out.push({ line: start, op: m[1]!.toUpperCase(), args: m[2]!.trim() });
    cur = "";
  }
  return out;
}

/** A JSON exec form (`["a", "b"]`) as its words, or undefined when `args` is not one. Pure. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith("[")) return undefined;
  try {
    const v: unknown = JSON.parse(args);
    return Array.isArray(v) && v.every((x) => typeof x === "string") ? (v as string[]) : undefined;
  } catch {
    return undefined;
  }
}

/** `$NAME` and `${NAME}` (and `${NAME:-default}`) replaced from `vars`; unknown names become "". Pure. */
export function expandVars(s: string, vars: Readonly<Record<string, string>>): string {
  return s.replace(/\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)/g, (_m, a?: string, dflt?: string, b?: string) => {
    const v = vars[(a ?? b)!];
    return v !== undefined && v !== "" ? v : (dflt ?? "");
  });
}

const normalize = (p: string) => {
  const parts: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join("/")}`;
};

/** A container path resolved against the WORKDIR in force. Pure. */
export function containerPath(p: string, workdir: string): string {
  return normalize(p.startsWith("/") ? p : `${workdir}/${p}`);
}

/** `KEY=value KEY2="v 2"` or the legacy `KEY value` form → pairs. Pure. */
export function envPairs(args: string): [string, string][] | undefined {
  const legacy = /^(\w+)\s+([^=]*)$/.exec(args);
  if (legacy && !args.includes("=")) return [[legacy[1]!, legacy[2]!.trim()]];
  const out: [string, string][] = [];
  const re = /(\w+)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)\s*/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  // biome-ignore lint/suspicious/noAssignInExpressions: the sticky regex walks the string
  while ((m = re.exec(args)) !== null) {
    const raw = m[2]!;
    const v = /^".*"$/.test(raw) ? raw.slice(1, -1).replace(/\\(.)/g, "$1") : raw.replace(/^'(.*)'$/, "$1");
    out.push([m[1]!, v]);
    at = re.lastIndex;
  }
  return at === args.length && out.length > 0 ? out : undefined;
}

/** What the planner carries from line to line. */
interface PlanState {
  image?: string;
  workdir: string;
  user: string;
  vars: Record<string, string>;
  env: Record<string, string>;
  steps: BuildStep[];
  entrypoint?: string[];
  cmd?: string[];
  /** The SHELL line's argv (shell-form RUN lines run through it), when one was given. */
  shellArgv?: string[];
}

/** Instructions that only describe the image (ports, labels, health): read, nothing to build. */
const DESCRIPTIVE = new Set(["LABEL", "EXPOSE", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER"]);

/** An ENTRYPOINT/CMD as argv: the exec form as is, a shell form as `/bin/sh -c`. Pure. */
function argvOf(args: string): string[] {
  return execForm(args) ?? ["/bin/sh", "-c", args];
}

/** Options (`--x=y`) and the rest of a COPY/ADD line. Pure. */
function copyParts(args: string): { opts: Record<string, string>; words: string[] } {
  const words = execForm(args) ?? args.split(/\s+/).filter((w) => w !== "");
  const opts: Record<string, string> = {};
  while (words[0]?.startsWith("--")) {
    const [k, ...v] = words.shift()!.slice(2).split("=");
    opts[k!] = v.join("=");
  }
  return { opts, words };
}

/** Why a COPY/ADD source cannot be copied from the build context, or undefined. Pure. */
function sourceProblem(op: string, src: string): string | undefined {
  if (/^[a-z]+:\/\//i.test(src) || src.startsWith("git@"))
    return `source '${src}' is a URL: nothing is fetched while building here; copy a file of the context instead`;
  if (src.startsWith("/") || src.split("/").includes(".."))
    return `source '${src}' lies outside the build context (environment/)`;
  if (/[*?[]/.test(src)) return `source '${src}' is a glob: name the files`;
  if (op === "ADD" && /\.(tar|tgz|tar\.(gz|bz2|xz|zst))$/.test(src))
    return `source '${src}' is an archive ADD would unpack: unpack it in the context, or COPY it and RUN tar`;
  return undefined;
}

/** A COPY/ADD line → its step, or why not. Pure. */
function copyStep(d: DockerLine, s: PlanState): BuildStep | string {
  const { opts, words } = copyParts(expandVars(d.args, s.vars));
  if (opts.from !== undefined && uvImageRequirement(opts.from) !== undefined)
    return uvCopyStep(d, opts, words, s);
  const unknown = Object.keys(opts).filter((k) => k !== "chown" && k !== "chmod");
  if (unknown.length > 0)
    return `option --${unknown[0]} is not honoured (${unknown[0] === "from" ? "another image or stage: only the FROM image is built here" : "only --chown and --chmod are"})`;
  if (words.length < 2) return "needs sources and a destination";
  const dest = words.at(-1)!;
  const sources = words.slice(0, -1);
  for (const src of sources) {
    const p = sourceProblem(d.op, src);
    if (p) return p;
  }
  return {
    kind: "copy",
    line: d.line,
    sources: sources.map((x) => normalize(x).slice(1) || "."),
    dest: containerPath(dest, s.workdir),
    intoDir: dest.endsWith("/") || dest === "." || sources.length > 1,
    ...(opts.chown !== undefined ? { chown: opts.chown } : {}),
    ...(opts.chmod !== undefined ? { chmod: opts.chmod } : {}),
  };
}

/** `COPY --from=ghcr.io/astral-sh/uv:<tag> /uv /uvx <dest>` → a copy served by PyPI's uv wheel, or why not. Pure. */
function uvCopyStep(
  d: DockerLine,
  opts: Record<string, string>,
  words: readonly string[],
  s: PlanState,
): BuildStep | string {
  const other = Object.keys(opts).find((k) => k !== "from" && k !== "chown" && k !== "chmod");
  if (other) return `option --${other} is not honoured (only --chown and --chmod are)`;
  if (words.length < 2) return "needs sources and a destination";
  const dest = words.at(-1)!;
  const sources = words.slice(0, -1).map((w) => uvImageSource(w) ?? w);
  const bad = sources.find((x) => uvImageSource(x) === undefined);
  if (bad)
    return `source '${bad}' is not in uv's image (it holds /uv and /uvx, which PyPI's uv wheel serves here)`;
  return {
    kind: "copy",
    line: d.line,
    sources,
    dest: containerPath(dest, s.workdir),
    intoDir: dest.endsWith("/") || sources.length > 1,
    ...(opts.chown !== undefined ? { chown: opts.chown } : {}),
    ...(opts.chmod !== undefined ? { chmod: opts.chmod } : {}),
    uv: uvImageRequirement(opts.from!)!,
  };
}

/** FROM: the first one names the image; a second is a multi-stage build. Pure. */
function fromLine(d: DockerLine, s: PlanState): string | undefined {
  if (s.image !== undefined) return "a second FROM (a multi-stage build) is not honoured: build one stage";
  const named = d.args.split(/\s+/).find((w) => !w.startsWith("--"));
  if (named === undefined) return "names no image";
  s.image = expandVars(named, s.vars);
  return undefined;
}

/** One instruction applied to the state: undefined when honoured, else why not. Pure. */
function planLine(d: DockerLine, s: PlanState): string | undefined {
  if (d.op === "FROM") return fromLine(d, s);
  if (d.op === "ARG") {
    const [name, ...v] = d.args.split("=");
    if (!/^\w+$/.test(name!.trim())) return "names no variable";
    if (s.vars[name!.trim()] === undefined)
      s.vars[name!.trim()] = expandVars(v.join("=").replace(/^"(.*)"$/, "$1"), s.vars);
    return undefined;
  }
  if (DESCRIPTIVE.has(d.op)) return undefined;
  if (s.image === undefined) return "comes before FROM";
  switch (d.op) {
    case "RUN": {
      const argv = execForm(d.args);
      const shell = argv ? argv.map((w) => `'${w.replace(/'/g, "'\\''")}'`).join(" ") : d.args;
      if (/^--/.test(shell)) return "RUN options (--mount, --network) are not honoured";
      // Docker runs a shell-form RUN through the SHELL in force; the exec form runs no shell
      const through = !argv && s.shellArgv ? { shellArgv: s.shellArgv } : {};
      s.steps.push({ kind: "run", line: d.line, shell, ...through });
      return undefined;
    }
    case "COPY":
    case "ADD": {
      const step = copyStep(d, s);
      if (typeof step === "string") return step;
      s.steps.push(step);
      return undefined;
    }
    case "ENV": {
      const pairs = envPairs(d.args);
      if (!pairs) return "is not KEY=value pairs";
      for (const [k, v] of pairs) {
        const value = expandVars(v, { ...s.vars, ...s.env });
        s.env[k] = value;
        s.vars[k] = value;
        s.steps.push({ kind: "env", line: d.line, name: k, value });
      }
      return undefined;
    }
    case "WORKDIR":
      s.workdir = containerPath(expandVars(d.args, s.vars), s.workdir);
      s.steps.push({ kind: "workdir", line: d.line, path: s.workdir });
      return undefined;
    case "USER":
      s.user = expandVars(d.args, s.vars);
      s.steps.push({ kind: "user", line: d.line, user: s.user });
      return undefined;
    case "ENTRYPOINT":
      s.entrypoint = argvOf(d.args);
      return undefined;
    case "CMD":
      s.cmd = argvOf(d.args);
      return undefined;
    case "SHELL": {
      const argv = execForm(d.args);
      if (!argv || argv.length === 0 || !argv[0]!.startsWith("/"))
        return 'SHELL must be a JSON array starting with an absolute path (Docker\'s form: SHELL ["/bin/bash", "-c"])';
      s.shellArgv = argv;
      return undefined;
    }
    case "VOLUME":
      return "VOLUME is not honoured (no volumes are made here): make the directory with RUN mkdir";
    case "ONBUILD":
      return "ONBUILD triggers are not honoured";
    default:
      return `${d.op} is not a Dockerfile instruction this builder knows`;
  }
}

/** The PATH a served image starts with (Docker's default; dockerfile-build.ts runs steps with it). */
export const IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Dockerfile text → its build plan, or every line that cannot be honoured. Pure. */
export function planDockerfile(
  text: string,
  buildArgs: Readonly<Record<string, string>> = {},
): BuildPlan | { readonly refusals: readonly Refusal[] } {
  // the image's own PATH (Docker's default) is what `ENV PATH=/x:${PATH}` extends
  const vars = { PATH: IMAGE_PATH, ...buildArgs };
  const s: PlanState = { workdir: "/", user: "root", vars, env: {}, steps: [] };
  const refusals: Refusal[] = [];
  for (const d of dockerLines(text)) {
    const why = planLine(d, s);
    if (why) refusals.push({ line: d.line, instruction: `${d.op} ${d.args}`, why });
  }
  if (s.image === undefined)
    refusals.push({ line: 1, instruction: "FROM", why: "the Dockerfile has no FROM line" });
  if (refusals.length > 0) return { refusals };
  return {
    image: s.image!,
    steps: s.steps,
    workdir: s.workdir,
    user: s.user,
    env: s.env,
    ...(s.entrypoint ? { entrypoint: s.entrypoint } : {}),
    ...(s.cmd ? { cmd: s.cmd } : {}),
  };
}
