import { createHash } from "node:crypto";

/**
 * Reading the scoring script's channel (its stdout) back, strictly. The script draws its marker
 * nonce itself and greets with it first, before anything of the agent's runs (scoring/script.ts):
 * the nonce is in no command line, environment or file the code under test can read. The channel
 * is still a pipe that code of the sandbox's uid can open (`/proc/<pid>/fd/1`, `pidfd_getfd`), so
 * nothing in it is taken on trust: every step's block carries the checksum of exactly its lines,
 * every marker line must come where the script's grammar puts it, and each departure is an
 * anomaly, placed before or after the first of the agent's code ran (scoring/script-verdict.ts
 * decides what it costs). Pure.
 */

/** One step's result as the script printed it. */
export interface StepResult {
  readonly exitCode: number;
  /** The step's combined stdout+stderr, cut in the middle when longer than the plan allowed. */
  readonly output: string;
  /** Bytes the step printed (before cutting). */
  readonly outputBytes: number;
  /** Set when the output was longer than the plan allowed and its middle was cut. */
  readonly cut?: true;
  readonly seconds: number;
}

/** A departure from the script's grammar; `afterAgent`: seen once the agent's code had started. */
export interface ChannelAnomaly {
  readonly reason: string;
  readonly afterAgent: boolean;
}

export interface ParsedScoring {
  readonly steps: ReadonlyMap<string, StepResult>;
  /** The script reached its end. */
  readonly done: boolean;
  /** The setup step (apply/install) after which the script stopped, if any. */
  readonly stoppedAt?: string;
  /** Steps that started but printed no result (the script was killed while they ran). */
  readonly unfinished: readonly string[];
  /** A step running the agent's code (build, lint, a test) started: what follows may be its doing. */
  readonly agentRan: boolean;
  /** Everything in the channel the script would not have written, in order. */
  readonly anomalies: readonly ChannelAnomaly[];
  /**
   * The script's shells were not dumpable (scoring/script-seal.ts): no process of the agent's could
   * read the nonce or copy the channel. False: they ran under the plain shell (or no greeting).
   */
  readonly sealed: boolean;
  /**
   * How the channel was out of reach, from the greeting: `apart` (the agent's code ran as another
   * user, scoring/script-seal.ts; `sealed` is true too), `sealed`, or `open`.
   */
  readonly channel: ScoringChannel;
}

/** How the scoring script kept its channel from the code it ran (scoring/script-seal.ts). */
export type ScoringChannel = "apart" | "sealed" | "open";

/** Steps that run the agent's code (its build, its lint, the tests that call it). */
export const runsAgentCode = (step: string) =>
  step === "build" || step === "lint" || step.startsWith("test.");

/** Steps the script runs through `run` (a `start` line first). */
const startsFirst = (step: string) => runsAgentCode(step) || step === "reach";
const STEP = /^(apply|build|reach|lint|install|(test|emitted|results|hidden)\.\d+\.\d+)$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** The line between the first and the last part of a step's output cut in the middle (no base64 line). */
export const CUT_LINE = "-cut-";
const INT = /^\d+$/;

interface Block {
  readonly step: string;
  readonly exitCode: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly lines: string[];
  /** A block that cannot count (a step reported twice, or without its start). */
  readonly dropped: boolean;
}

/** A closed block's result, or why it cannot be believed. Pure. */
function closeBlock(b: Block, sha: string): StepResult | string {
  const text = b.lines.length ? `${b.lines.join("\n")}\n` : "";
  if (createHash("sha256").update(text).digest("hex") !== sha)
    return `step '${b.step}': its output block does not match its checksum (lines were written into the scorer's channel or its helpers)`;
  const parts: string[][] = [[]];
  for (const l of b.lines) {
    if (l === CUT_LINE) parts.push([]);
    else parts.at(-1)!.push(l);
  }
  if (parts.length > 2) return `step '${b.step}': its output block was cut twice`;
  const [head, tail] = parts.map((p) => Buffer.from(p.join(""), "base64").toString("utf8"));
  const output =
    tail === undefined
      ? head!
      : `${head}\n[… flakegym: ${b.bytes - Buffer.byteLength(head!) - Buffer.byteLength(tail)} bytes of output cut …]\n${tail}`;
  return {
    exitCode: b.exitCode,
    output,
    outputBytes: b.bytes,
    seconds: b.seconds,
    ...(tail === undefined ? {} : { cut: true as const }),
  };
}

/** The nonce and seal of the script's greeting: the first line that is one. Pure. */
function greeting(lines: readonly string[]): { nonce: string; channel: ScoringChannel } | undefined {
  const g = lines.find((l) => l.startsWith("FLAKEGYM-SCORE-HELLO "));
  const m = /^FLAKEGYM-SCORE-HELLO ([0-9a-f]{24}) (apart|sealed|open)$/.exec(g ?? "");
  return m ? { nonce: m[1]!, channel: m[2] as ScoringChannel } : undefined;
}

/** The parser's state between lines. */
interface Reading {
  readonly steps: Map<string, StepResult>;
  readonly started: Set<string>;
  readonly anomalies: ChannelAnomaly[];
  cur: Block | undefined;
  lastEnded: string | undefined;
  done: boolean;
  stoppedAt: string | undefined;
  agentRan: boolean;
}

const anomaly = (r: Reading, reason: string): void => {
  r.anomalies.push({ reason, afterAgent: r.agentRan });
};

/** One marker line (`word` and its arguments) read into `r`; what was wrong with it, if anything. */
function markerLine(r: Reading, word: string | undefined, rest: readonly string[]): string | undefined {
  const step = rest[0] ?? "";
  if (r.done || r.stoppedAt !== undefined)
    return `a '${word}' line after the script ${r.done ? "ended" : "stopped"}`;
  if (word === "start" && rest.length === 1 && STEP.test(step) && startsFirst(step)) {
    if (r.started.has(step) || r.steps.has(step)) return `step '${step}' started twice`;
    r.started.add(step);
    r.lastEnded = undefined;
    if (runsAgentCode(step)) r.agentRan = true;
    return undefined;
  }
  if (word === "result" && rest.length === 4 && STEP.test(step) && rest.slice(1).every((x) => INT.test(x))) {
    // a block read only to be dropped: its lines are not taken for anything else
    const twice = r.steps.has(step);
    const dropped = twice || (startsFirst(step) && !r.started.has(step));
    const [, code, bytes, seconds] = rest.map(Number) as [number, number, number, number];
    r.cur = { step, exitCode: code, bytes, seconds, lines: [], dropped };
    r.lastEnded = undefined;
    if (!dropped) return undefined;
    return twice ? `step '${step}' reported twice` : `step '${step}' reported without starting`;
  }
  if (word === "stopped" && rest.length === 1) {
    const ok = (step === "apply" || step === "install") && r.lastEnded === step;
    if (!ok || r.steps.get(step)?.exitCode === 0)
      return `a 'stopped ${step}' line the script did not write (no failed '${step}' step before it)`;
    r.stoppedAt = step;
    return undefined;
  }
  if (word === "done" && rest.length === 0) {
    r.done = true;
    return undefined;
  }
  return `a marker line the script does not write: '${[word, ...rest].join(" ").slice(0, 80)}'`;
}

/**
 * Reads the script's stdout back into per-step results and the anomalies seen. Only lines starting
 * with the greeting's marker count as protocol; a block's lines must match the checksum its end
 * line carries. A block cut off by a kill is left out (that step did not finish). Pure.
 */
export function parseScoringOutput(stdout: string): ParsedScoring {
  const lines = stdout.split("\n").map((l) => l.replace(/\r$/, ""));
  const hello = greeting(lines);
  const nonce = hello?.nonce;
  const r: Reading = {
    steps: new Map(),
    started: new Set(),
    anomalies: [],
    cur: undefined,
    lastEnded: undefined,
    done: false,
    stoppedAt: undefined,
    agentRan: false,
  };
  if (nonce === undefined) {
    // without the greeting nothing can be read; marker-like lines mean a run happened and was garbled
    const afterAgent = lines.some((l) => l.startsWith("FLAKEGYM-SCORE-"));
    r.anomalies.push({ reason: "the scoring script's greeting (its nonce) is missing", afterAgent });
  }
  const M = `FLAKEGYM-SCORE-${nonce ?? "-"} `;
  for (const line of nonce === undefined ? [] : lines) {
    if (r.cur) {
      const [word, step, sha] = line.startsWith(M) ? line.slice(M.length).split(" ") : [];
      if (word !== "end" || step !== r.cur.step || sha === undefined || !HEX64.test(sha)) {
        r.cur.lines.push(line);
        continue;
      }
      const res = closeBlock(r.cur, sha);
      if (typeof res === "string") anomaly(r, res);
      else if (!r.cur.dropped) r.steps.set(r.cur.step, res);
      r.lastEnded = r.cur.step;
      r.cur = undefined;
    } else if (line.startsWith(M)) {
      const [word, ...rest] = line.slice(M.length).split(" ");
      const wrong = markerLine(r, word, rest);
      if (wrong !== undefined) anomaly(r, wrong);
    }
  }
  const unfinished = [...r.started].filter((s) => !r.steps.has(s));
  return {
    steps: r.steps,
    done: r.done,
    unfinished,
    agentRan: r.agentRan,
    anomalies: r.anomalies,
    sealed: hello !== undefined && hello.channel !== "open",
    channel: hello?.channel ?? "open",
    ...(r.stoppedAt !== undefined ? { stoppedAt: r.stoppedAt } : {}),
  };
}
