import { posix } from "node:path";
import type { ProfileId } from "@flakegym/profiles";
import { parse as parseToml } from "smol-toml";
import { match } from "ts-pattern";
import { z } from "zod";
import { HARBOR_DIR } from "./harbor-test-paths.js";
import { type Difficulty, shellQuote, TaskSpec, taskWorkdirProblem, workdirProblem } from "./task-spec.js";

/**
 * Harbor (Terminal-Bench 2) task directories ↔ flakegym tasks. A Harbor task is `task.toml`,
 * `instruction.md`, `environment/Dockerfile` (+ the files it copies), `tests/test.sh` (writes the
 * reward to /logs/verifier/reward.txt) and `solution/solve.sh`. Pure: harbor-dir.ts reads and
 * writes the folders.
 *
 * Reading maps the environment to a flakegym profile: the base image names the toolchain (served
 * here by this machine's system: harbor-served.ts), `apt-get install` lines name packages that system
 * must hold, COPY lines give the workspace files (under the final WORKDIR, which becomes the task's
 * `workdir`) and read-only mounts (directories elsewhere), other RUN lines become offline install
 * commands. solve.sh is the reference solution (harbor-oracle.ts runs a script one). A task is
 * rejected, with the reason, when it needs what the offline sandbox cannot give (network installs,
 * other images, ADD, ENV, ENTRYPOINT, /tests or /logs paths inside test files).
 */

/** The parts of task.toml flakegym reads; other keys are allowed (Harbor adds fields over time). */
export const HarborTaskToml = z
  .object({
    version: z.string().optional().describe("the task-config schema (legacy key)"),
    schema_version: z.string().optional().describe("the task-config schema (Harbor ≥ 0.25: 1.4)"),
    metadata: z
      .object({
        difficulty: z.string().optional().describe("easy | medium | hard"),
        category: z.string().optional(),
        tags: z.array(z.string()).optional(),
      })
      .passthrough()
      .default({}),
    verifier: z.object({ timeout_sec: z.number().positive().optional() }).passthrough().default({}),
    agent: z.object({ timeout_sec: z.number().positive().optional() }).passthrough().default({}),
    environment: z
      .object({
        docker_image: z.string().optional().describe("a prebuilt image instead of environment/Dockerfile"),
        memory_mb: z.number().int().positive().optional(),
        storage_mb: z.number().int().positive().optional(),
        cpus: z.number().positive().optional(),
        build_timeout_sec: z.number().positive().optional(),
        workdir: z
          .string()
          .optional()
          .describe("the container's working directory, over the Dockerfile's WORKDIR"),
      })
      .passthrough()
      .default({}),
  })
  .passthrough();
export type HarborTaskToml = z.infer<typeof HarborTaskToml>;

/** Why a Harbor directory was rejected: the file (relative to the task dir) and the reason. */
export interface HarborProblem {
  readonly field: string;
  readonly reason: string;
}

/** The field of a task.toml parse error: its line, and the key that line sets when it sets one. Pure. */
export function tomlErrorField(text: string, err: unknown): string {
  const line = (err as { line?: unknown }).line;
  if (typeof line !== "number") return "task.toml";
  const key = /^\s*([A-Za-z0-9_.-]+)\s*=/.exec(text.split("\n")[line - 1] ?? "")?.[1];
  return `task.toml line ${line}${key ? ` (${key})` : ""}`;
}

/** The reason of a task.toml parse error, with what to do. Pure. */
export function tomlErrorReason(err: unknown): string {
  const first = (err as Error).message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? "";
  return `is not valid TOML (${first}); Harbor's own reading (Python's tomllib) rejects it too: the task is broken, fix task.toml (a string over several lines needs """triple quotes""")`;
}

/** task.toml text → its fields, or the problem. Pure. */
export function parseTaskToml(text: string): HarborTaskToml | HarborProblem {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    return { field: tomlErrorField(text, err), reason: tomlErrorReason(err) };
  }
  const r = HarborTaskToml.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    return { field: `task.toml: ${i.path.join(".")}`, reason: i.message };
  }
  return r.data;
}

/** The Docker base image of each profile, for export; import maps images back by name. */
export const PROFILE_IMAGES: Readonly<Record<ProfileId, string>> = {
  python: "python:3.11-slim-bookworm",
  node: "node:20-bookworm-slim",
  rust: "rust:1-slim-bookworm",
  go: "golang:1.19-bookworm",
  c: "gcc:12-bookworm",
  "dev-base": "debian:bookworm-slim",
};

/** The profile of a Docker base image, by its name (registry and tag ignored). Pure. */
export function profileOfImage(image: string): ProfileId | undefined {
  const name = image.split("@")[0]!.split(":")[0]!.split("/").pop()!.toLowerCase();
  if (/python/.test(name)) return "python";
  if (/^(node|nodejs)$/.test(name)) return "node";
  if (/^rust/.test(name)) return "rust";
  if (/^(golang|go)$/.test(name)) return "go";
  if (/^(gcc|clang)$/.test(name)) return "c";
  if (/^(debian|ubuntu|buildpack-deps)$/.test(name)) return "dev-base";
  return undefined;
}

/** RUN commands that fetch over the network: the sandbox has none. */
const NETWORK_COMMAND =
  /\b(apt-get|apt|apk|yum|dnf|curl|wget|pip3?|uv|uvx|poetry|npm\s+(install|ci|i)|yarn|pnpm|cargo\s+(install|fetch)|go\s+(get|install|mod\s+download)|git\s+clone)\b/;

/** What an environment/Dockerfile gives a flakegym task. */
export interface Environment {
  readonly profile: ProfileId;
  /** The container directory the workspace is (Dockerfile WORKDIR, default /). */
  readonly workdir: string;
  /** Files or directories of environment/ and where they go, relative to the workspace. */
  readonly copies: readonly { readonly from: string; readonly to: string; readonly intoDir: boolean }[];
  /** Files or directories of environment/ copied into a directory outside WORKDIR: shown read-only at `at`. */
  readonly mounts: readonly { readonly from: string; readonly at: string }[];
  /** RUN commands, run offline in the snapshot as install commands. */
  readonly install: readonly string[];
  /** The FROM image as written (recorded with what serves it here). */
  readonly image: string;
  /** Debian/Ubuntu packages the RUN lines `apt-get install`: served by the system the sandbox binds (checked at import). */
  readonly aptPackages: readonly string[];
  /** pytest (and its ctrf plugin) as RUN lines `pip install` them: served by Debian's python3-pytest. */
  readonly pipPytest: readonly string[];
  /** ENV lines of output-only variables (`DEBIAN_FRONTEND`, `PYTHONUNBUFFERED`, …), not carried: recorded. */
  readonly envDropped?: readonly string[];
}

/**
 * Variables that only steer installers' prompts, caches and output buffering, never what a
 * program computes: an `ENV` of them alone is dropped (recorded) when the system is served, not built.
 */
const OUTPUT_ONLY_ENV = new Set([
  "DEBIAN_FRONTEND",
  "PYTHONDONTWRITEBYTECODE",
  "PYTHONUNBUFFERED",
  "PIP_NO_CACHE_DIR",
  "PIP_DISABLE_PIP_VERSION_CHECK",
  "PIP_ROOT_USER_ACTION",
]);

/** Why an ENV line cannot be served (undefined: its output-only names are added to `dropped`). */
function envLineProblem(args: string, dropped: string[]): string | undefined {
  const names = envNames(args);
  if (names.length === 0 || names.some((n) => !OUTPUT_ONLY_ENV.has(n)))
    return `ENV ${args}: flakegym tasks have no environment variables of their own (only ${[...OUTPUT_ONLY_ENV].join(", ")} are dropped; --build-env honours any ENV)`;
  dropped.push(...names);
  return undefined;
}

/** Whether a COPY's destination is a directory: a trailing `/`, `.`, several sources, or a source that is a directory of the build context (Docker's rule). Pure. */
function copiesIntoDir(parts: readonly string[], contextDirs: ReadonlySet<string>): boolean {
  const dest = parts.at(-1)!;
  const srcs = parts.slice(0, -1).map((f) => normalize(f).replace(/(.)\/$/, "$1"));
  return dest.endsWith("/") || dest === "." || parts.length > 2 || srcs.some((f) => contextDirs.has(f));
}

/** The variable names an ENV line sets (`A=1 B=2` or the old `A value` form). Pure. */
export function envNames(args: string): string[] {
  const first = args.trim().split(/\s+/)[0] ?? "";
  if (!first.includes("=")) return first === "" ? [] : [first];
  return [...args.matchAll(/(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=/g)].map((m) => m[1]!);
}

/** Dockerfile instructions, continuation lines joined and comments dropped. Pure. */
export function dockerInstructions(text: string): { op: string; args: string }[] {
  const out: { op: string; args: string }[] = [];
  let cur = "";
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (cur === "" && /^\s*#/.test(line)) continue;
    if (line.endsWith("\\")) {
      cur += `${line.slice(0, -1)} `;
      continue;
    }
    cur += line;
    const m = /^\s*(\w+)\s+([\s\S]*)$/.exec(cur);
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim() });
    cur = "";
  }
  return out;
}

const normalize = (p: string) => p.replace(/\/+$/, "") || "/";

/** A container path relative to the workdir, or undefined when it lies outside it. Pure. */
function underWorkdir(dest: string, workdir: string): string | undefined {
  const abs = dest.startsWith("/") ? normalize(dest) : normalize(`${workdir}/${dest}`);
  const wd = normalize(workdir);
  if (abs === wd) return ".";
  const prefix = wd === "/" ? "/" : `${wd}/`;
  return abs.startsWith(prefix) ? abs.slice(prefix.length) : undefined;
}

/** environment/Dockerfile → profile, workspace files and install commands, or why not. Pure. */
export function environmentOf(
  dockerfile: string,
  contextDirs: ReadonlySet<string> = new Set(),
  workdirOverride?: string,
): Environment | HarborProblem {
  const field = "environment/Dockerfile";
  let profile: ProfileId | undefined;
  let workdir = "/";
  let image = "";
  const pending: { from: string; abs: string; intoDir: boolean; line: string }[] = [];
  const install: string[] = [];
  const aptPackages: string[] = [];
  const pipPytest: string[] = [];
  const envDropped: string[] = [];
  for (const { op, args } of dockerInstructions(dockerfile)) {
    const problem = match(op)
      .with("FROM", () => {
        if (profile !== undefined) return "has several FROM lines (multi-stage builds are not supported)";
        // options (`--platform=linux/amd64`) come before the image; `AS name` after it
        const named = args.split(/\s+/).find((w) => !w.startsWith("--"));
        if (named === undefined) return `FROM ${args}: names no image`;
        image = named;
        profile = profileOfImage(image);
        return profile === undefined
          ? `base image '${image}' has no flakegym profile (python, node, rust, golang, gcc, debian/ubuntu images map to one)`
          : undefined;
      })
      .with("WORKDIR", () => {
        workdir = args.startsWith("/") ? normalize(args) : normalize(`${workdir}/${args}`);
        return undefined;
      })
      .with("COPY", () => {
        const parts = args.split(/\s+/).filter((p) => !p.startsWith("--chown") && !p.startsWith("--chmod"));
        if (parts.some((p) => p.startsWith("--")))
          return `COPY ${args}: options other than --chown/--chmod (e.g. --from) are not supported`;
        if (parts.length < 2 || args.startsWith("["))
          return `COPY ${args}: give sources and a destination (not the JSON form)`;
        const dest = parts.at(-1)!;
        // the container path, placed relative to the final WORKDIR (the workspace) once all lines are read
        const abs = normalize(posix.normalize(dest.startsWith("/") ? dest : `${workdir}/${dest}`));
        const intoDir = copiesIntoDir(parts, contextDirs);
        for (const from of parts.slice(0, -1)) {
          if (from.startsWith("/") || from.split("/").includes("..") || /[*?[]/.test(from))
            return `COPY ${args}: source '${from}' must be a plain path inside environment/`;
          pending.push({ from: normalize(from), abs, intoDir, line: `COPY ${args}` });
        }
        return undefined;
      })
      .with("RUN", () => {
        const shell = args.startsWith("[") ? execFormToShell(args) : args;
        const apt = aptRunOf(shell);
        if (typeof apt === "string") return apt;
        aptPackages.push(...apt.packages);
        pipPytest.push(...(apt.pip ?? []));
        if (apt.rest === undefined) return undefined;
        if (NETWORK_COMMAND.test(apt.rest))
          return `RUN ${args}: fetches over the network (the sandbox is offline); put what it installs into the profile or the environment's files`;
        install.push(apt.rest);
        return undefined;
      })
      .with("ADD", () => "ADD is not supported (it fetches URLs and unpacks archives): use COPY")
      .with("ENV", () => envLineProblem(args, envDropped))
      .with(
        "ENTRYPOINT",
        () =>
          `ENTRYPOINT ${args}: runs at container start (services, /etc edits); flakegym starts no entrypoint, so the task's environment would be missing what it sets up`,
      )
      .with("CMD", "LABEL", "EXPOSE", "USER", "ARG", "SHELL", "STOPSIGNAL", "HEALTHCHECK", () => undefined)
      .otherwise(() => `instruction ${op} is not supported`);
    if (problem) return { field, reason: problem };
  }
  if (profile === undefined) return { field, reason: "has no FROM line" };
  if (workdirOverride !== undefined) workdir = workdirOverride;
  const wdProblem = workdir === "/" ? undefined : taskWorkdirProblem(workdir);
  if (wdProblem) return { field, reason: `WORKDIR ${wdProblem}` };
  const copies: { from: string; to: string; intoDir: boolean }[] = [];
  const mounts: { from: string; at: string }[] = [];
  for (const c of pending) {
    const to = underWorkdir(c.abs, workdir);
    if (to !== undefined) {
      copies.push({ from: c.from, to, intoDir: c.intoDir || to === "." });
      continue;
    }
    const outside = mountProblem(c.abs, c.intoDir);
    if (outside) return { field, reason: `${c.line}: ${outside}` };
    mounts.push({ from: c.from, at: c.abs });
  }
  return {
    profile,
    workdir,
    copies,
    mounts,
    install: install.filter((c) => !madeByWorkdir(c, workdir)),
    image,
    aptPackages: [...new Set(aptPackages)],
    pipPytest: [...new Set(pipPytest)],
    ...(envDropped.length > 0 ? { envDropped: [...new Set(envDropped)] } : {}),
  };
}

/** `mkdir -p <WORKDIR>` (or a directory under it): the WORKDIR exists in the sandbox, so the line has nothing to do. Pure. */
function madeByWorkdir(cmd: string, workdir: string): boolean {
  const m = /^mkdir\s+-p\s+(\/[^\s;&|]*)$/.exec(cmd.trim());
  return m !== null && workdir !== "/" && (normalize(m[1]!) === workdir || m[1]!.startsWith(`${workdir}/`));
}

/**
 * Why a COPY outside WORKDIR cannot be shown read-only at its container path, or undefined: only a
 * directory destination outside the system's own paths can (a file would hide its whole parent). Pure.
 */
export function mountProblem(abs: string, intoDir: boolean): string | undefined {
  const where = `the destination ${abs} lies outside WORKDIR`;
  if (!intoDir)
    return `${where} and is a file: flakegym shows files outside the workspace only as whole directories (end the destination with /)`;
  const why = workdirProblem(abs);
  return why ? `${where}, and ${why}: flakegym binds this machine's system there` : undefined;
}

/**
 * The Debian packages that serve a `pip install` of pytest alone (`pytest==8.4.1`,
 * `pytest-json-ctrf`, the tasks' usual verifier tools): Debian's python3-pytest, whose version
 * differs from the pin; undefined for any other command or package. Pure.
 */
export function pytestPipInstall(words: readonly string[]): string[] | undefined {
  // returns the pins; the serving package is PYTEST_DEBIAN_PACKAGE
  const i = words[0] === "python3" && words[1] === "-m" ? 2 : 0;
  if (!/^pip3?$/.test(words[i] ?? "") || words[i + 1] !== "install") return undefined;
  const pkgs = words.slice(i + 2).filter((w) => !w.startsWith("-"));
  if (pkgs.length === 0 || !pkgs.every((p) => PYTEST_PACKAGES.test(p.replace(/^['"]|['"]$/g, ""))))
    return undefined;
  return pkgs.map((p) => p.replace(/^['"]|['"]$/g, ""));
}

/** The Debian package that serves a pip-installed pytest. */
export const PYTEST_DEBIAN_PACKAGE = "python3-pytest";

/** A shell command list split on `&&` and `;` (no quoting inside the separators is assumed). */
const segmentsOf = (cmd: string) =>
  cmd
    .split(/&&|;/)
    .map((s) => s.trim())
    .filter((s) => s !== "");

/**
 * A RUN line's apt part: `apt-get update`, `apt-get install [opts] <pkgs>` and the apt lists'
 * `rm -rf /var/lib/apt/lists/*` are taken out (the packages are served by the sandbox's system, checked
 * at import); what is left (`rest`) runs as an install command. A line mixing apt with `||`, pipes
 * or other apt verbs is refused by name. Pure.
 */
export function aptRunOf(cmd: string): { packages: string[]; pip?: string[]; rest?: string } | string {
  if (!/\bapt(-get)?\b|\bpip3?\b/.test(cmd)) return { packages: [], rest: cmd };
  if (/\|\||\|/.test(cmd))
    return `RUN ${cmd}: apt-get combined with pipes or || is not read; split it into plain && steps`;
  const packages: string[] = [];
  const pip: string[] = [];
  const rest: string[] = [];
  for (const seg of segmentsOf(cmd)) {
    const words = seg.split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w));
    if (
      words[0] === "rm" &&
      words.slice(1).every((w) => w.startsWith("-") || w.startsWith("/var/lib/apt/lists"))
    )
      continue;
    const pytestOnly = pytestPipInstall(words);
    if (pytestOnly) {
      pip.push(...pytestOnly);
      continue;
    }
    if (!/^apt(-get)?$/.test(words[0] ?? "")) {
      rest.push(seg);
      continue;
    }
    const verb = words.slice(1).find((w) => !w.startsWith("-"));
    if (verb === "update" || verb === "clean") continue;
    if (verb !== "install")
      return `RUN ${cmd}: 'apt-get ${verb ?? ""}' is not read (only update, install, clean)`;
    const pkgs = words.slice(words.indexOf("install") + 1).filter((w) => !w.startsWith("-"));
    const odd = pkgs.find((p) => !/^[a-z0-9][a-z0-9+.-]*$/.test(p));
    if (odd)
      return `RUN ${cmd}: apt package '${odd}' is not a plain package name (versions, globs and files are not read)`;
    packages.push(...pkgs);
  }
  return {
    packages,
    ...(pip.length > 0 ? { pip } : {}),
    ...(rest.length > 0 ? { rest: rest.join(" && ") } : {}),
  };
}

function execFormToShell(args: string): string {
  try {
    const parts = z.array(z.string()).parse(JSON.parse(args));
    return parts.map((p) => (/^[\w./:=@%+,-]+$/.test(p) ? p : `'${p.replaceAll("'", `'\\''`)}'`)).join(" ");
  } catch {
    return args;
  }
}

/** The reference patch inside solve.sh: the first heredoc holding a unified diff. Pure. */
export function patchOfSolveScript(script: string): string | undefined {
  const re = /<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1[^\n]*\n([\s\S]*?)\n\2[ \t]*(\n|$)/g;
  for (const m of script.matchAll(re)) {
    const body = m[3]!;
    if (/^(diff --git |--- )/m.test(body)) return `${body}\n`;
  }
  return undefined;
}

/** Packages the profile's own pytest stands in for when a verifier asks uv for them. */
const PYTEST_PACKAGES = /^(pytest|pytest-json-ctrf)([<>=!~].*)?$/i;

/**
 * The Harbor cookbook's verifier bootstrap made offline: `curl … astral.sh/uv … | sh`, `source
 * $HOME/.local/bin/env` and an `apt-get` of curl are dropped, and `uvx [-p V] [-w pytest…] pytest
 * <args>` / `uv run [--with pytest…] pytest <args>` become `python3 -m pytest <args>` (the profile's
 * Python and pytest; `--ctrf <file>`, a report of the pytest-json-ctrf plugin, is dropped). Returns
 * the script unchanged when it does not use uv, and a problem when uv is asked for packages other
 * than pytest (the sandbox has no network to fetch them). Pure.
 */
export function offlineUvVerifier(script: string): { script: string; notes: string[] } | HarborProblem {
  if (!/astral\.sh\/uv|(^|[\s;&|(])uvx?\s/m.test(script)) return { script, notes: [] };
  const field = "tests/test.sh";
  const out: string[] = [];
  const dropped: string[] = [];
  let pythonAsked: string | undefined;
  for (const line of script.replace(/\\\r?\n/g, " ").split("\n")) {
    // `DEBIAN_FRONTEND=noninteractive apt-get …`: the command after its variable assignments
    const t = line.trim().replace(/^([A-Za-z_][A-Za-z0-9_]*=\S*\s+)+/, "");
    if (/^(curl|wget)\b.*astral\.sh\/uv.*\|\s*(ba)?sh\b/.test(t)) {
      dropped.push("the uv installer");
      continue;
    }
    if (/^(source|\.)\s+"?\$(HOME|\{HOME\})\/\.(local\/bin|cargo)\/env"?\s*$/.test(t)) continue;
    if (/^apt(-get)?\s+(-\S+\s+)*update(\s+-\S+)*\s*$/.test(t)) continue;
    if (/^apt(-get)?\s+(-\S+\s+)*install(\s+-\S+)*(\s+(curl|ca-certificates))+\s*$/.test(t)) continue;
    if (/^uv\s+(venv|init)\b/.test(t)) continue;
    const pipInstall = /^uv\s+(pip\s+install|add)\s+(.*)$/.exec(t);
    if (pipInstall) {
      const pkgs = pipInstall[2]!.split(/\s+/).filter((w) => w !== "" && !w.startsWith("-"));
      const other = pkgs.filter((p) => !PYTEST_PACKAGES.test(p.replace(/^['"]|['"]$/g, "")));
      if (other.length > 0)
        return {
          field,
          reason: `installs ${other.join(", ")} with uv at test time: the sandbox is offline, and only pytest is provided by the profile`,
        };
      continue;
    }
    const run = /^(.*?)\b(uvx|uv\s+run)\s+(.*)$/.exec(line);
    if (run) {
      const words = run[3]!.split(/\s+/).filter((w) => w !== "");
      const withs: string[] = [];
      let i = 0;
      for (; i < words.length; i++) {
        const w = words[i]!;
        if (/^(-p|--python|-w|--with|--from)$/.test(w)) {
          const v = words[++i] ?? "";
          if (w === "-p" || w === "--python") pythonAsked = v;
          else withs.push(v);
        } else if (/^(--python|--with|--from)=/.test(w)) {
          const [k, v] = w.split("=", 2) as [string, string];
          if (k === "--python") pythonAsked = v;
          else withs.push(v);
        } else if (w.startsWith("-")) continue;
        else break;
      }
      const tool = words[i];
      if (tool !== "pytest" && !(tool === "python" && words[i + 1] === "-m" && words[i + 2] === "pytest"))
        return {
          field,
          reason: `runs '${tool ?? "(nothing)"}' through uv; flakegym makes only a uv-run pytest offline`,
        };
      const other = withs.filter((p) => !PYTEST_PACKAGES.test(p.replace(/^['"]|['"]$/g, "")));
      if (other.length > 0)
        return {
          field,
          reason: `asks uv for ${other.join(", ")} at test time: the sandbox is offline, and only pytest is provided by the profile`,
        };
      const rest = words.slice(tool === "pytest" ? i + 1 : i + 3);
      const args: string[] = [];
      for (let j = 0; j < rest.length; j++) {
        if (rest[j] === "--ctrf") j++;
        else if (!rest[j]!.startsWith("--ctrf=")) args.push(rest[j]!);
      }
      out.push(`${run[1]}python3 -m pytest ${args.join(" ")}`.trimEnd());
      continue;
    }
    out.push(line);
  }
  const notes = [
    `tests/test.sh: the uv bootstrap is replaced by the profile's python3 -m pytest (offline)${pythonAsked ? `; uv asked for Python ${pythonAsked}, the profile's Python runs instead` : ""}`,
  ];
  return { script: out.join("\n"), notes };
}

export { offlinePytestPip, offlineServedApt, withoutCtrf } from "./harbor-offline-tests.js";

/** Where a task folder keeps what a Dockerfile copies outside WORKDIR (`container/<path>`). */
export const MOUNTS_DIR = "container";

export {
  HARBOR_DIR,
  restoreTestFile,
  rewriteTestFile,
  rewriteTestScript,
  testFileProblem,
} from "./harbor-test-paths.js";

/**
 * Judges a verifier's reward.json (run by python3 inside the sandbox when there is no reward.txt;
 * argv[1] the file): every key is printed (kept whole in the log) and each must be a number ≥ 1.
 */
export const REWARD_JSON_JUDGE = [
  "import json,sys",
  "r=json.load(open(sys.argv[1]))",
  "print('harbor reward.json:',json.dumps(r,sort_keys=True))",
  "ok=isinstance(r,dict) and len(r)>0 and all(type(v) in (int,float) and v>=1 for v in r.values())",
  "sys.exit(0 if ok else 1)",
].join("\n");

/**
 * Judges `$V/reward.txt` as Harbor reads it (`float()` of its text, whitespace aside: `1`, `1.0`,
 * `+1.`) — passing when the number is ≥ 1, as for reward.json's keys; two words, or anything else
 * (`1e0` included), does not pass. Plain sh (an image need not have awk). Pure text.
 */
export const REWARD_TXT_JUDGE = `set -f; set -- $(cat "$V/reward.txt"); set +f; R="\${1-}"; [ $# -eq 1 ] && case "$R" in "" | *[!0-9.+]* | *.*.* | ?*+*) false ;; *) I="\${R%%.*}"; I="\${I#+}"; [ -n "$I" ] && [ "$I" -ge 1 ] 2>/dev/null ;; esac`;

/** The eval command of an imported Harbor task: a fresh log dir, test.sh, then reward.txt = 1 or every reward.json key ≥ 1. */
export function harborEvalCommand(verifierTimeoutSec?: number): string {
  // task.toml's verifier.timeout_sec cuts test.sh short as Harbor does (then no reward: 0)
  const limit = verifierTimeoutSec ? `timeout -k 10 ${Math.ceil(verifierTimeoutSec)} ` : "";
  return [
    `export HARBOR_ROOT="$PWD/${HARBOR_DIR}" HARBOR_WORKSPACE="$PWD"`,
    `rm -rf "$HARBOR_ROOT/logs" && mkdir -p "$HARBOR_ROOT/logs/verifier"`,
    `${limit}bash "$HARBOR_ROOT/tests/test.sh" </dev/null`,
    `V="$HARBOR_ROOT/logs/verifier"`,
    `if [ -f "$V/reward.txt" ]; then ${REWARD_TXT_JUDGE}; else [ -f "$V/reward.json" ] && python3 -c ${shellQuote(REWARD_JSON_JUDGE)} "$V/reward.json"; fi`,
  ].join("; ");
}

export const DIFFICULTIES = ["easy", "medium", "hard"] as const;

/** Harbor's difficulty string → flakegym's, or undefined when it names none of them. Pure. */
export function difficultyOf(s: string | undefined): Difficulty | undefined {
  const d = s?.trim().toLowerCase();
  return DIFFICULTIES.find((x) => x === d);
}

export interface HarborParts {
  readonly id: string;
  readonly toml: HarborTaskToml;
  readonly instruction: string;
  readonly env: Environment;
  readonly testFiles: readonly string[];
  readonly solution: string;
  readonly commit: string;
  /** Task-folder directories shown read-only at container paths. */
  readonly mounts?: readonly { readonly dir: string; readonly at: string }[];
  /** Provenance: what served the environment here, how the reference solution was had. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** The verifier's command when not {@link harborEvalCommand} (a built environment's: harbor-built.ts). */
  readonly evalCommand?: string;
}

/** The TaskSpec of an imported Harbor task (its files: repo/, hidden/.harbor/tests/, solution.patch). Pure. */
export function harborTaskSpec(p: HarborParts): TaskSpec {
  const limits = TaskSpec.shape.limits.parse(undefined);
  const difficulty = difficultyOf(p.toml.metadata.difficulty);
  return TaskSpec.parse({
    $comment: "imported from a Harbor task directory (flakegym tasks import)",
    id: p.id,
    summary: `${p.id}: ${p.instruction
      .trim()
      .split("\n")[0]!
      .replace(/^#+\s*/, "")
      .slice(0, 100)}`,
    prompt: p.instruction.trim(),
    profile: p.env.profile,
    network: "none",
    ...(difficulty ? { difficulty } : {}),
    source: { kind: "local", dir: "repo", commit: p.commit },
    install: [...p.env.install],
    tests: {
      dir: "hidden",
      run: { kind: "eval_cmd", command: p.evalCommand ?? harborEvalCommand(p.toml.verifier.timeout_sec) },
    },
    solution: "solution.patch",
    protected: [`${HARBOR_DIR}/`],
    ...(normalize(p.env.workdir) === "/" ? {} : { workdir: normalize(p.env.workdir) }),
    ...(p.mounts && p.mounts.length > 0 ? { mounts: p.mounts.map((m) => ({ ...m })) } : {}),
    ...(p.metadata && Object.keys(p.metadata).length > 0 ? { metadata: { ...p.metadata } } : {}),
    limits: {
      ...limits,
      ...(p.toml.environment.memory_mb ? { memoryMb: p.toml.environment.memory_mb } : {}),
      ...(p.toml.environment.storage_mb ? { diskMb: p.toml.environment.storage_mb } : {}),
      ...(p.toml.agent.timeout_sec ? { wallClockMs: Math.round(p.toml.agent.timeout_sec * 1000) } : {}),
    },
  });
}
