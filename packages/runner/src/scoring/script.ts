import type { TestCommand } from "../tasks/task-spec.js";
import type { ReachProbe } from "./build-reach.js";
import { CUT_LINE, type ParsedScoring, runsAgentCode, type StepResult } from "./script-channel.js";
import { codeUser, SCRIPT_HEAD, sealedScript } from "./script-seal.js";

/**
 * Scoring as ONE self-contained shell script, so it runs the same on every backend — including
 * Nomad, where each `exec` is a fresh allocation and nothing carries over between two calls.
 *
 * The script applies the agent's diff, runs the optional build and lint commands, installs the
 * hidden tests and runs them `repeat` times. Files travel base64-encoded in quoted heredocs (or,
 * when the script would be too long for one command-line argument, staged beforehand on backends
 * whose execs share a workspace). Every step's exit code and output are printed between marker
 * lines carrying a per-run random nonce, and the output itself is base64-encoded, so nothing the
 * agent's code prints (or a diff contains) can be mistaken for a result. Pure: composition and
 * parsing only; `scoreDiff` runs it.
 */

/** A file the script needs: the agent's diff, a hidden tests patch, or a hidden test file. */
export interface ScriptFile {
  /** Workspace-relative path (hidden test files) or a name in the script's scratch dir (patches). */
  readonly path: string;
  readonly content: Buffer;
}

export interface ScoringPlan {
  /** The agent's diff (already stripped of hidden-test edits); empty: nothing to apply. */
  readonly agentDiff: string;
  /** How the hidden tests get in: `git apply` of a patch, or files written into the workspace (none: no step). */
  readonly install?:
    | { readonly kind: "patch"; readonly patch: string }
    | { readonly kind: "files"; readonly files: readonly ScriptFile[] };
  /** The build command; with `reach`, the step `reach` then lists the files it compiled (scoring/build-reach.ts). */
  readonly build?: { readonly command: string; readonly timeoutMs: number; readonly reach?: ReachProbe };
  readonly lint?: { readonly command: string; readonly timeoutMs: number };
  readonly tests: readonly TestCommand[];
  /**
   * Instead of `tests`: ONE command per run that runs every hidden test; its result lines (those
   * matching `resultPattern`, an ERE fixed per result format) are kept as step `results.<run>.0`.
   */
  readonly suite?: { readonly command: string; readonly resultPattern: string };
  /**
   * Added to a hidden test file after install (scoring/results.ts: a test that must fail). Absent
   * when the installed files already carry it (materialised on the host, scoring/read-only.ts).
   */
  readonly canary?: { readonly file: string; readonly prepend: string; readonly append: string };
  /**
   * Workspace-relative hidden test files: copied aside after install, put back before every test
   * command and compared after it (step `hidden.<run>.<index>` lists the ones that changed).
   */
  readonly hiddenFiles?: readonly string[];
  readonly testTimeoutMs: number;
  /** Runs of the hidden tests (≥ 1). */
  readonly repeat: number;
  /** Most output bytes kept per step: the first and last half of it when longer. */
  readonly maxOutputBytes: number;
  /**
   * The suite's graded assertions are externalized (scoring/externalize): each run's test command
   * gets `FLAKEGYM_EMIT`, the file its tests append what they computed to, read back whole (up to
   * {@link MAX_EMISSION_BYTES}) as step `emitted.<run>.0`.
   */
  readonly emissions?: true;
}

/** Most bytes of emissions kept per run (more: the step is cut, and the scorer fails it closed). */
export const MAX_EMISSION_BYTES = 8 * 1024 * 1024;

/** Step names in the output: fixed words and test indices, never text from the task or the agent. */
export type StepName =
  | "apply"
  | "build"
  | "reach"
  | "lint"
  | "install"
  | `test.${number}.${number}`
  | `results.${number}.${number}`
  | `hidden.${number}.${number}`
  | `emitted.${number}.${number}`;

export const testStep = (run: number, index: number): StepName => `test.${run}.${index}`;
export const resultsStep = (run: number, index: number): StepName => `results.${run}.${index}`;
export const hiddenStep = (run: number, index: number): StepName => `hidden.${run}.${index}`;
export const emittedStep = (run: number, index: number): StepName => `emitted.${run}.${index}`;

/** Longest script passed inline (one command-line argument, base64'd again by Nomad: < 128 KiB). */
export const MAX_INLINE_SCRIPT_BYTES = 90_000;

export interface ComposeOptions {
  /**
   * Random per run (hex): payload delimiters and temp names a diff cannot have guessed. Not the
   * marker nonce: the script draws that itself, so it is in no command line (scoring/script-channel.ts).
   */
  readonly salt: string;
  /**
   * Directory (workspace-relative) holding payloads written there beforehand instead of being
   * embedded; only for backends whose execs share one workspace (local, podman).
   */
  readonly stagedDir?: string;
}

export interface ComposedScript {
  readonly script: string;
  /** Files to write into the workspace before the script runs (only with `stagedDir`). */
  readonly staged: ScriptFile[];
  /** A deadline covering every step's own deadline, for the single exec. */
  readonly timeoutMs: number;
}

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const b64Lines = (b: Buffer) => (b.toString("base64").match(/.{1,76}/g) ?? []).join("\n");
const secs = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** The prefix of every marker line of the run whose script drew `nonce`. */
export const markerOf = (nonce: string) => `FLAKEGYM-SCORE-${nonce}`;

/** The first line of every scoring script's stdout: this word, a space, the marker nonce the script drew. */
export const GREETING = "FLAKEGYM-SCORE-HELLO";

/**
 * The script's fixed head: it draws its own marker nonce (never in its command line, its
 * environment or a file: only in its shells' memory) and prints it first, before anything of the
 * agent's runs; then its temp dir and the shell helpers every step goes through (`emit`, `run`,
 * `trun`, `stop`). `salt` (the composer's, per run) only keeps payload delimiters and temp names
 * unguessable by a diff written beforehand. Pure.
 */
function scriptPrelude(salt: string, stagedDir: string | undefined, maxOutputBytes: number): string[] {
  const max = Math.max(2, maxOutputBytes);
  return [
    SCRIPT_HEAD,
    "set -u",
    // the bootstrap's word (scoring/script-seal.ts): `apart` (the agent's code runs as another
    // user), `sealed` (no process of the agent's can read this shell) or `open`; the dir holding
    // the sealed shell; apart, the code's uid and gid
    "SEAL=$1; SX=$2",
    // apart (scoring/script-seal.ts): AS runs a command as the code's user (W, G), CO names it for chown
    'AS=; CO=; if [ "$SEAL" = apart ]; then W=$3; G=$4; CO="$3:$4"',
    `  AS="${codeUser("$W", "$G")}"`,
    // /tmp the script's (sticky: the code keeps its own entries, never renames the script's), HOME the code's
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    '  { chown 0:0 "${TMPDIR:-/tmp}" && chmod 1777 "${TMPDIR:-/tmp}"; chown "$CO" "${HOME:-}"; } > /dev/null 2>&1',
    "fi",
    "N=$(od -An -N12 -tx1 /dev/urandom 2>/dev/null | tr -d ' \\n')",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    '[ "${#N}" -eq 24 ] || { echo "flakegym scoring: no nonce from /dev/urandom" >&2; exit 97; }',
    'M="FLAKEGYM-SCORE-$N"',
    `printf '${GREETING} %s %s\\n' "$N" "$SEAL"`,
    // from here on no program but the script's shells (sealed) holds the channel: every other
    // one writes to a file, a pipe into the shell or /dev/null (a process the agent's code leaves
    // behind can open a helper's descriptors: scoring/script-seal.ts)
    `tmp=$(mktemp -d "\${TMPDIR:-/tmp}/flakegym-score-XXXXXXXXXX" 2>/dev/null) || { tmp="$PWD/.flakegym-score-${salt}"; [ -z "$CO" ] && mkdir -p "$tmp" > /dev/null; } || { echo "flakegym scoring: no private temp dir" >&2; exit 97; }`,
    // C: where the code's HOME, emissions and the build's reach files are: apart, a dir of the
    // script's the code can enter but not change (each of them in it the code's)
    'C=$tmp; if [ -n "$CO" ]; then C=$(mktemp -d "$tmp.code-XXXXXXXXXX") && chmod 0755 "$C" || exit 97; fi',
    `trap '{ chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp" "$C"\${SX:+ "$SX"}${stagedDir === undefined ? "" : ` ${stagedDir}`}; } > /dev/null' EXIT`,
    // staged payloads move out of the workspace before anything runs
    ...(stagedDir === undefined
      ? []
      : [`{ cp -R ${stagedDir}/. "$tmp"/ && rm -rf ${stagedDir}; } > /dev/null`]),
    "TO=; if command -v timeout >/dev/null 2>&1; then TO=1; fi",
    // what a helper hands the shell through a pipe, a process the agent's code left can write
    // into (a helper is dumpable): every such value printed into the channel is checked first
    'now() { t=$(date +%s 2>/dev/null); case $t in ""|*[!0-9]*) t=0 ;; esac; echo "$t"; }',
    // emit <step> <exit code> <output file> <seconds> [most bytes]: the step's result, its output
    // base64'd, then the checksum of exactly the lines between (a line written into the channel from
    // outside breaks it)
    "emit() {",
    // (the cut line is no marker: nothing the nonce is in ever goes to a file)
    `  n=$(wc -c < "$3" | tr -d " "); x=\${5:-${max}}; h=$((x / 2)); T=`,
    '  case $n in ""|*[!0-9]*) n=0; T=1 ;; esac',
    `  if [ "$n" -le "$x" ]; then base64 < "$3"; else head -c "$h" "$3" | base64; printf "%s\n" ${CUT_LINE}; tail -c "$h" "$3" | base64; fi > "$tmp/b64"`,
    '  s=$(sha256sum < "$tmp/b64" | cut -c1-64)',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    '  case $s in *[!0-9a-f]*) T=1 ;; esac; [ "${#s}" -eq 64 ] || T=1',
    // read into the shell and printed by it (`cat` would hold the channel as its stdout); what a
    // watcher writes into cat's pipe breaks the checksum, and it cannot be a marker line: the nonce
    // is in no file and no descriptor it can reach (scanning it here costs 0.17 s CPU per 8 MB)
    '  b=$(cat "$tmp/b64")',
    // a checksum no block has: the block reads as written into (a 0 with the reason)
    `  [ -z "$T" ] || s=${"0".repeat(64)}`,
    '  printf "%s result %s %s %s %s\n" "$M" "$1" "$2" "$n" "$4"',
    '  [ -z "$b" ] || printf "%s\\n" "$b"; b=',
    '  printf "%s end %s %s\n" "$M" "$1" "$s"',
    "}",
    // apart: ends every process of the code's user (kill -1 from it: all it may signal, none of the
    // script's), again while any was left
    "gone() { [ -z \"$CO\" ] || $AS /bin/sh -c 'i=0; while [ $i -lt 100 ] && kill -s KILL -- -1; do i=$((i + 1)); done' > /dev/null 2>&1; }",
    // run <step> <seconds> <command>: one command, its own deadline, output to a file;
    // "start" first, so a run killed from inside (by the code under test) is told from a dead worker
    "run() {",
    '  printf "%s start %s\\n" "$M" "$1"',
    "  c=$3",
    "  t0=$(now)",
    '  if [ -n "$TO" ]; then timeout -k 5 "$2" $AS sh -c "$c" > "$tmp/out" 2>&1 < /dev/null',
    '  else $AS sh -c "$c" > "$tmp/out" 2>&1 < /dev/null; fi',
    // nothing the command left runs on while the script reads what it wrote
    "  rc=$?; gone",
    '  emit "$1" "$rc" "$tmp/out" "$(( $(now) - t0 ))"',
    "}",
    // trun: a hidden-test command, with a fresh empty HOME (nothing a previous run left there) and no user site
    'trun() { { rm -rf "$C/home"; mkdir -p "$C/home"; [ -z "$CO" ] || chown "$CO" "$C/home"; } > /dev/null; ( HOME="$C/home"; PYTHONNOUSERSITE=1; export HOME PYTHONNOUSERSITE; run "$@" ); }',
    // fail <step> <exit code> <message file>: a setup step failed; stop here
    'stop() { emit "$1" "$2" "$tmp/out" 0; printf "%s stopped %s\\n" "$M" "$1"; exit 0; }',
  ];
}

/** The script being composed: its lines, the payloads staged beside it, and how payloads get in. */
interface ScriptDraft {
  readonly lines: string[];
  readonly staged: ScriptFile[];
  readonly stagedDir: string | undefined;
  /** The heredoc terminator of embedded payloads (per run, so no payload can contain it). */
  readonly eof: string;
  /** The suffix of temp names beside workspace files: per run, so no diff can have taken it. */
  readonly scratch: string;
  /** The hidden test files the script snapshots, resets and checks (none without an install). */
  readonly hidden: readonly string[];
}

/** A payload as a path the script can read: embedded into $tmp, or staged beforehand. */
function payload(d: ScriptDraft, name: string, content: Buffer): string {
  if (d.stagedDir !== undefined) d.staged.push({ path: `${d.stagedDir}/${name}`, content });
  else d.lines.push(`base64 -d > "$tmp/${name}" << '${d.eof}'`, b64Lines(content), d.eof);
  return `"$tmp/${name}"`;
}

/** `git apply` of a payload; the step reported at once, or (`report: false`) by the caller later. */
function gitApply(d: ScriptDraft, step: StepName, name: string, patch: string, report = true): void {
  const file = payload(d, name, Buffer.from(patch));
  // as the code's user (apart): the files it makes are the code's, as the agent's own were
  d.lines.push(`$AS git apply --whitespace=nowarn - < ${file} > "$tmp/out" 2>&1 || stop ${step} $?`);
  if (report) d.lines.push(`emit ${step} 0 "$tmp/out" 0`);
}

/** Installs the hidden test files one by one, leaving those the backend bound read-only as they are. */
function installFiles(d: ScriptDraft, files: readonly { path: string; content: Buffer }[]): void {
  d.lines.push(': > "$tmp/out"');
  files.forEach((f, i) => {
    const src = payload(d, `file-${i}`, f.content);
    const dest = q(f.path);
    const k = d.hidden.indexOf(f.path);
    // already there, owned by another user and as installed: bound read-only by the backend
    // (WorkerSpec.readOnlyFiles); only code that can chown could have put it there
    d.lines.push(
      `if [ -f ${dest} ] && [ ! -O ${dest} ] && [ "$(stat -c %u ${dest})" != "\${W:--}" ] && [ "$(sha256sum < ${src})" = "$(sha256sum < ${dest})" ]; then printf 'read-only, owned by another user: %s\n' ${dest} >> "$tmp/out";${k < 0 ? "" : ` B${k}=1;`}`,
      // dirs the code's (apart), the file the script's: the code reads it, cannot write it
      `else { $AS mkdir -p "$(dirname ${dest})" && cp ${src} ${q(`${f.path}.${d.scratch}`)} && mv ${q(`${f.path}.${d.scratch}`)} ${dest}; } >> "$tmp/out" 2>&1 || stop install $?; fi`,
    );
  });
}

/** Adds the hidden tests (patch or files) and the canary, then keeps a read-only copy of each file. */
function installHidden(d: ScriptDraft, plan: ScoringPlan): void {
  // B<i>: hidden file i is bound read-only by the backend (set at install; nothing inherited)
  if (d.hidden.length) d.lines.push(d.hidden.map((_, i) => `B${i}=`).join("; "));
  if (plan.install === undefined) return; // no hidden tests to add
  if (plan.install.kind === "patch") {
    if (plan.install.patch.trim() !== "") gitApply(d, "install", "tests.patch", plan.install.patch, false);
    else d.lines.push(': > "$tmp/out"');
  } else installFiles(d, plan.install.files);
  if (plan.canary) {
    const c = plan.canary;
    const pre = payload(d, "canary-pre", Buffer.from(c.prepend));
    const post = payload(d, "canary-post", Buffer.from(c.append));
    const tmpFile = q(`${c.file}.${d.scratch}`);
    d.lines.push(
      `{ cat ${pre} ${q(c.file)} ${post} > ${tmpFile} && mv ${tmpFile} ${q(c.file)}; } >> "$tmp/out" 2>&1 || stop install $?`,
    );
  }
  // reported once, after the canary: a canary that cannot be added stops the install it belongs to
  if (plan.install.kind === "files" || plan.install.patch.trim() !== "")
    d.lines.push(`emit install 0 "$tmp/out" 0`);
  if (d.hidden.length) {
    d.lines.push('mkdir -p "$tmp/hidden" > /dev/null');
    // H<i>: the installed file's checksum, kept in the shell's memory: the copy in $tmp is
    // writable by code of the same uid, so the check after each run compares with this
    d.hidden.forEach((f, i) => {
      d.lines.push(
        `H${i}=; if [ -f ${q(f)} ]; then cp ${q(f)} "$tmp/hidden/${i}" > /dev/null; H${i}=$(sha256sum < "$tmp/hidden/${i}"); fi`,
      );
    });
    d.lines.push('chmod -R a-w "$tmp/hidden" > /dev/null');
  }
}

/**
 * Puts the hidden test files back as installed (whatever a previous run did to them), read-only;
 * a file the backend bound read-only (`B<i>` set at install) cannot have changed and stays.
 */
function resetHidden(d: ScriptDraft): void {
  d.hidden.forEach((f, i) => {
    d.lines.push(
      `if [ -z "\${B${i}:-}" ]; then { rm -rf ${q(f)}; if [ -f "$tmp/hidden/${i}" ]; then mkdir -p "$(dirname ${q(f)})" && cp "$tmp/hidden/${i}" ${q(f)} && chmod a-w ${q(f)}; fi; } > /dev/null; fi`,
    );
  });
}

/** Lists the hidden test files a test command changed (sha256sum: coreutils, like base64 and timeout). */
function checkHidden(d: ScriptDraft, r: number, i: number): void {
  if (!d.hidden.length) return;
  d.lines.push(': > "$tmp/out"');
  d.hidden.forEach((f, k) => {
    d.lines.push(
      `[ "$H${k}" = "$(sha256sum < ${q(f)} 2>/dev/null)" ] || printf '%s\\n' ${q(f)} >> "$tmp/out"`,
    );
  });
  d.lines.push(`emit ${hiddenStep(r, i)} 0 "$tmp/out" 0`);
}

/** The hidden-test runs: the suite once per repeat, or each command once per repeat. */
function testRuns(d: ScriptDraft, plan: ScoringPlan, repeat: number): void {
  for (let r = 0; r < repeat; r++) {
    if (plan.suite) {
      resetHidden(d);
      const test = `trun ${testStep(r, 0)} ${secs(plan.testTimeoutMs)} ${q(plan.suite.command)}`;
      if (plan.emissions)
        d.lines.push(
          '{ rm -f "$C/emit"; : > "$C/emit"; [ -z "$CO" ] || chown "$CO" "$C/emit"; } > /dev/null',
          `( FLAKEGYM_EMIT="$C/emit"; export FLAKEGYM_EMIT; ${test} )`,
          // what the code left there must be a plain file (apart, the code's dir: never a link or a fifo)
          'E="$C/emit"; if [ -L "$E" ] || [ ! -f "$E" ]; then E="$tmp/none"; : > "$E"; fi',
          `emit ${emittedStep(r, 0)} 0 "$E" 0 ${MAX_EMISSION_BYTES}`,
        );
      else d.lines.push(test);
      d.lines.push(
        `grep -E ${q(plan.suite.resultPattern)} "$tmp/out" > "$tmp/res" 2>/dev/null; emit ${resultsStep(r, 0)} 0 "$tmp/res" 0`,
      );
      checkHidden(d, r, 0);
      continue;
    }
    plan.tests.forEach((t, i) => {
      resetHidden(d);
      d.lines.push(`trun ${testStep(r, i)} ${secs(plan.testTimeoutMs)} ${q(t.command)}`);
      checkHidden(d, r, i);
    });
  }
}

/**
 * The build step; with a reach probe, a marker touched before it, its variables set for it (each a
 * file in the probe's dir, never in the workspace), and step `reach` after it listing what it compiled.
 */
function buildSteps(d: ScriptDraft, build: NonNullable<ScoringPlan["build"]>): void {
  const t = secs(build.timeoutMs);
  if (!build.reach) {
    d.lines.push(`run build ${t} ${q(build.command)}`);
    return;
  }
  const vars = Object.entries(build.reach.buildEnv ?? {});
  for (const [name, file] of vars)
    if (!/^[A-Z_][A-Z0-9_]*$/.test(name) || !/^[A-Za-z0-9._-]+$/.test(file))
      throw new TypeError(`reach probe variable ${name}=${file}: a plain name and file name are required`);
  const env = vars.map(([name, file]) => `${name}="$C/reach/${file}"; export ${name}; `).join("");
  const setup =
    build.reach.setup === undefined
      ? ""
      : `FLAKEGYM_REACH="$C/reach"; export FLAKEGYM_REACH; { ${build.reach.setup}; } > /dev/null; `;
  // apart: the probe's dir the code's (its build writes there)
  const own = '{ [ -z "$CO" ] || chown -R "$CO" "$C/reach"; } > /dev/null; ';
  d.lines.push(
    '{ rm -rf "$C/reach"; mkdir -p "$C/reach" && touch "$C/reach/mark"; } > /dev/null',
    `( ${env}${setup}${own}run build ${t} ${q(build.command)} )`,
    `( FLAKEGYM_REACH="$C/reach"; export FLAKEGYM_REACH; run reach ${t} ${q(build.reach.list)} )`,
  );
}

/** The whole script's deadline: every step's own deadline plus 5 s each, plus a minute of slack. Pure. */
export function scriptTimeoutMs(plan: ScoringPlan): number {
  const slack = 60_000;
  const commands = plan.suite ? 1 : plan.tests.length;
  return (
    (plan.build ? (plan.build.timeoutMs + 5_000) * (plan.build.reach ? 2 : 1) : 0) +
    (plan.lint ? plan.lint.timeoutMs + 5_000 : 0) +
    Math.max(1, plan.repeat) * commands * (plan.testTimeoutMs + 5_000) +
    slack
  );
}

/** Composes the scoring script for `plan`. Pure. */
export function composeScoringScript(plan: ScoringPlan, o: ComposeOptions): ComposedScript {
  if (!/^[0-9a-f]{8,64}$/.test(o.salt)) throw new TypeError("scoring salt must be 8-64 hex digits");
  if (o.stagedDir !== undefined && !/^[A-Za-z0-9._-]+$/.test(o.stagedDir))
    throw new TypeError(`staged dir '${o.stagedDir}' must be one plain workspace-relative name`);
  const d: ScriptDraft = {
    lines: scriptPrelude(o.salt, o.stagedDir, plan.maxOutputBytes),
    staged: [],
    stagedDir: o.stagedDir,
    eof: `FLAKEGYM_EOF_${o.salt}`,
    scratch: `flakegym-${o.salt}`,
    hidden: plan.install === undefined ? [] : (plan.hiddenFiles ?? []),
  };
  if (plan.agentDiff.trim() !== "") gitApply(d, "apply", "agent.patch", plan.agentDiff);
  if (plan.build) buildSteps(d, plan.build);
  if (plan.lint) d.lines.push(`run lint ${secs(plan.lint.timeoutMs)} ${q(plan.lint.command)}`);
  installHidden(d, plan);
  testRuns(d, plan, Math.max(1, plan.repeat));
  d.lines.push('printf "%s done\\n" "$M"', "");
  return { script: sealedScript(d.lines.join("\n")), staged: d.staged, timeoutMs: scriptTimeoutMs(plan) };
}

export type { ParsedScoring, StepResult } from "./script-channel.js";
export { parseScoringOutput } from "./script-channel.js";

/**
 * Every step a script composed for `plan` reports when it runs to its end, in order: a finished
 * script without one of them lost an emission. Pure.
 */
export function expectedSteps(plan: ScoringPlan): StepName[] {
  const steps: StepName[] = [];
  if (plan.agentDiff.trim() !== "") steps.push("apply");
  if (plan.build) steps.push("build", ...(plan.build.reach ? (["reach"] as const) : []));
  if (plan.lint) steps.push("lint");
  const hidden = plan.install === undefined ? [] : (plan.hiddenFiles ?? []);
  if (plan.install && (plan.install.kind === "files" || plan.install.patch.trim() !== ""))
    steps.push("install");
  for (let r = 0; r < Math.max(1, plan.repeat); r++) {
    const commands = plan.suite ? 1 : plan.tests.length;
    for (let i = 0; i < commands; i++) {
      steps.push(testStep(r, i));
      if (plan.suite && plan.emissions) steps.push(emittedStep(r, i));
      if (plan.suite) steps.push(resultsStep(r, i));
      if (hidden.length) steps.push(hiddenStep(r, i));
    }
  }
  return steps;
}

/**
 * The step whose code ended the scoring script early, or undefined when the script finished, stopped
 * at a setup step, or ended before any of the agent's code ran (then nothing here could have ended
 * it: the machinery lost it). A step killed while it ran is named; a script ended after such a step
 * reported is the agent's doing too — a process its code left behind (a daemon, a detached watcher)
 * outlives the step and can end the script between two steps, to turn a failing run into a lost
 * one. Pure.
 */
export function agentEndedScript(
  p: ParsedScoring,
): { readonly step: string; readonly during: boolean } | undefined {
  if (p.done || p.stoppedAt !== undefined) return undefined;
  const during = p.unfinished.find(runsAgentCode);
  if (during !== undefined) return { step: during, during: true };
  const after = [...p.steps.keys()].filter(runsAgentCode).at(-1);
  return after === undefined ? undefined : { step: after, during: false };
}

/** Whether a step's exit status means its own deadline (coreutils `timeout`) killed it. */
export function timedOutStep(r: StepResult, timeoutMs: number): boolean {
  return (r.exitCode === 124 || r.exitCode === 137) && r.seconds >= secs(timeoutMs) - 1;
}
