import type { z } from "zod";
import type { ChatTokenizer } from "../export/tokenizer.js";
import { RunSummary } from "../rollout/summary.js";
import { GroupLine, MetricsLine, RunManifest, Score, TrajectoryResult } from "../run-format/schema.js";
import { viewRowOf } from "../run-format/trajectory-record.js";
import { type CompareKind, type CompareResponse, compareEvals, compareRuns, pageCompare } from "./compare.js";
import { type ConvMessage, conversationOf } from "./conversation.js";
import { evalSummaryOf, ReportHead, trialDirsOf } from "./eval-data.js";
import { type FoundRefs, findRefs } from "./find-refs.js";
import { indexGroupLines } from "./group-lines.js";
import { groupRows, queryRows, type RowQuery, type TrajectoryRow } from "./query.js";
import {
  type EvalFileName,
  type EvalFileResponse,
  type EvalListItem,
  type IndexResponse,
  type RunListItem,
  type RunResponse,
  runFactsOf,
  type TokensResponse,
  type TrajectoryResponse,
} from "./responses.js";
import { lockStateOf, runStateOf } from "./run-state.js";
import { checkedSegments, type SafeRoot, SEGMENT, ViewPathError } from "./safe-read.js";
import { type SearchResponse, searchTranscripts } from "./transcript-search.js";

/**
 * The viewer's data: what each API route returns (responses.ts), read lazily from the run and eval dirs under a
 * {@link SafeRoot}. Listing a run reads run.json, summary.json and metrics.jsonl only (cached by
 * size and mtime); a trajectory's files are read when it is opened; groups.jsonl is indexed (one
 * pass, cached) only when a token view asks for it.
 */

const MB = 1024 * 1024;
export const CAPS = {
  json: 8 * MB,
  metrics: 512 * MB,
  diff: 8 * MB,
  lastTurn: 64 * MB,
  report: 256 * MB,
  groupLine: 256 * MB,
} as const;

/** A transcript search reads this much at a time and lists at most this many trajectories. */
const SEARCH_CHUNK = 256 * 1024;
const SEARCH_HITS = 100;

/** How many runs' rows `warm` reads ahead. */
const WARM_RUNS = 3;

const parseJson = (text: string, file: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    throw new ViewPathError(`${file} is not valid JSON`, 400);
  }
};

async function readJsonFile<T>(root: SafeRoot, segs: string[], schema: z.ZodType<T>): Promise<T | null> {
  if (!(await root.stat(segs))) return null;
  const parsed = schema.safeParse(parseJson(await root.readText(segs, CAPS.json), segs.join("/")));
  return parsed.success ? parsed.data : null;
}

export interface ViewStore {
  index(): Promise<IndexResponse>;
  run(ref: string, q: RowQuery): Promise<RunResponse>;
  stamp(ref: string): Promise<string>;
  trajectory(ref: string, id: string): Promise<TrajectoryResponse>;
  tokens(ref: string, id: string): Promise<TokensResponse>;
  evalHtml(ref: string): Promise<string>;
  evalFile(ref: string, name: EvalFileName): Promise<EvalFileResponse>;
  /** Trajectories whose transcript holds `q` ({@link searchTranscripts}); stops when `signal` aborts. */
  search(ref: string, q: string, signal: AbortSignal, expired: () => boolean): Promise<SearchResponse>;
  /** Two runs or two evals side by side ({@link compareRuns}, {@link compareEvals}), one page. */
  compare(kind: CompareKind, a: string, b: string, page: number, size: number): Promise<CompareResponse>;
  /**
   * Reads ahead what the first pages will ask for — the newest runs' rows, then their groups.jsonl
   * index when they are finished — while the browser starts; never throws.
   */
  warm(): Promise<void>;
}

/** A run's rows as read from one version of its metrics.jsonl. */
interface RowsEntry {
  readonly key: string;
  readonly rows: TrajectoryRow[];
  readonly skipped: number;
}

/** What one view store holds: the root it reads and its caches, by file version. */
interface ViewStoreState {
  readonly root: SafeRoot;
  readonly opts: ViewStoreOptions;
  /** A run's rows by ref, with the metrics.jsonl version they were read from. */
  readonly rowsCache: Map<string, RowsEntry>;
  /** In-flight reads of metrics.jsonl by ref and file version: a page and `warm` share one read. */
  readonly rowsReading: Map<string, { key: string; entry: Promise<RowsEntry> }>;
  readonly groupIndex: Map<string, { key: string; lines: Promise<Map<string, [number, number]>> }>;
  readonly reports: Map<string, { key: string; head: ReportHead | null; error?: string }>;
  /** The last group line read (a group's trajectories are opened one after another: the export). */
  lastGroup: { ref: string; span: [number, number]; line: GroupLine | null } | undefined;
}

export interface ViewStoreOptions {
  tokenizer?: ChatTokenizer;
  /** Ends background reads (the viewer is stopping). */
  signal?: AbortSignal;
}

/** The viewer's reads of a root of runs and evals: module functions over one {@link ViewStoreState}. */
export function createViewStore(root: SafeRoot, opts: ViewStoreOptions = {}): ViewStore {
  const st: ViewStoreState = {
    root,
    opts,
    rowsCache: new Map(),
    rowsReading: new Map(),
    groupIndex: new Map(),
    reports: new Map(),
    lastGroup: undefined,
  };
  return {
    index: () => indexPage(st),
    stamp: (ref) => stamp(st, ref),
    run: (ref, q) => runPage(st, ref, q),
    trajectory: (ref, id) => trajectoryPage(st, ref, id),
    tokens: (ref, id) => tokensPage(st, ref, id),
    evalHtml: (ref) => evalHtml(st, ref),
    warm: () => warmUp(st),
    search: (ref, q, signal, expired) => searchRun(st, ref, q, signal, expired),
    compare: (kind, a, b, page, size) => comparePage(st, kind, a, b, page, size),
    evalFile: (ref, name) => evalFile(st, ref, name),
  };
}

async function isRun(st: ViewStoreState, segs: string[]) {
  return (await st.root.stat([...segs, "run.json"])) !== undefined;
}

async function manifestOf(st: ViewStoreState, ref: string): Promise<RunManifest> {
  const segs = checkedSegments(ref);
  const m = await readJsonFile(st.root, [...segs, "run.json"], RunManifest);
  if (!m) throw new ViewPathError(`${ref || "."}: no readable run.json`, 404);
  return m;
}

async function stamp(st: ViewStoreState, ref: string): Promise<string> {
  const segs = checkedSegments(ref);
  const parts = await Promise.all(
    ["metrics.jsonl", "summary.json", "groups.jsonl", "atropos-sent.jsonl"].map(async (f) => {
      const s = await st.root.stat([...segs, f]);
      return s ? `${s.size}.${Math.floor(s.mtimeMs)}` : "-";
    }),
  );
  return parts.join(":");
}

async function rowsOf(st: ViewStoreState, ref: string, policies: readonly string[]): Promise<RowsEntry> {
  const segs = [...checkedSegments(ref), "metrics.jsonl"];
  const fst = await st.root.stat(segs);
  const key = fst ? `${fst.size}.${fst.mtimeMs}` : "none";
  const hit = st.rowsCache.get(ref);
  if (hit && hit.key === key) return hit;
  const reading = st.rowsReading.get(ref);
  if (reading?.key === key) return reading.entry;
  const entry = readRows(st, segs, fst !== undefined, key, policies).then((e) => {
    st.rowsCache.set(ref, e);
    return e;
  });
  st.rowsReading.set(ref, { key, entry });
  entry.then(
    () => st.rowsReading.delete(ref),
    () => st.rowsReading.delete(ref),
  );
  return entry;
}

async function readRows(
  st: ViewStoreState,
  segs: string[],
  exists: boolean,
  key: string,
  policies: readonly string[],
) {
  let rows: TrajectoryRow[] = [];
  let skipped = 0;
  if (exists) {
    const text = await st.root.readText(segs, CAPS.metrics);
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        skipped++; // a torn last line of a run in progress
        continue;
      }
      const p = MetricsLine.safeParse(v);
      if (p.success) rows.push(viewRowOf(p.data, policies));
      else skipped++;
    }
    // a resumed run may log a trajectory twice: the last line wins
    rows = [...new Map(rows.map((r) => [r.id, r])).values()];
  }
  return { key, rows, skipped };
}

async function dataBytes(st: ViewStoreState, ref: string): Promise<number> {
  const sizes = await Promise.all(
    ["metrics.jsonl", "groups.jsonl"].map(
      async (f) => (await st.root.stat([...checkedSegments(ref), f]))?.size ?? 0,
    ),
  );
  return sizes.reduce((a, b) => a + b, 0);
}

async function runListItem(st: ViewStoreState, ref: string): Promise<RunListItem> {
  try {
    const m = await manifestOf(st, ref);
    const bytes = await dataBytes(st, ref);
    const s = await readJsonFile(st.root, [...checkedSegments(ref), "summary.json"], RunSummary);
    const state = runStateOf(s, await lockStateOf(st.root, checkedSegments(ref)));
    const head = {
      ref,
      runId: m.runId,
      createdAt: m.createdAt,
      tasks: m.config.tasks.length,
      policies: m.config.policies,
      expected: m.config.tasks.length * m.config.groupSize,
    };
    if (s)
      return {
        ...head,
        finished: s.trajectories.finished,
        meanReward: s.meanReward,
        outcomes: s.trajectories.outcomes,
        durationMs: s.durationMs,
        complete: s.complete,
        state,
        bytes,
      };
    const { rows } = await rowsOf(st, ref, m.config.policies);
    const scored = rows.filter((r) => r.reward !== null);
    const outcomes: Record<string, number> = {};
    for (const r of rows) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
    return {
      ...head,
      finished: rows.length,
      meanReward: scored.length ? scored.reduce((a, r) => a + (r.reward ?? 0), 0) / scored.length : null,
      outcomes,
      durationMs: null,
      complete: false,
      state,
      bytes,
    };
  } catch (e) {
    return {
      ref,
      runId: ref,
      createdAt: "",
      tasks: 0,
      policies: [],
      expected: 0,
      finished: 0,
      meanReward: null,
      outcomes: {},
      durationMs: null,
      complete: false,
      state: "failed",
      bytes: 0,
      error: e instanceof Error ? e.message : String(e),
    };
  }
}

/** The runs and evals under the root, nested ones too (one bounded walk per index). */
async function refsOf(st: ViewStoreState): Promise<FoundRefs> {
  return findRefs({
    listDirs: (segs) => st.root.listDirs([...segs]),
    has: async (segs, f) => (await st.root.stat([...segs, f])) !== undefined,
  });
}

async function runRefs(st: ViewStoreState): Promise<string[]> {
  return (await refsOf(st)).runs.map((segs) => segs.join("/"));
}

async function evalItem(st: ViewStoreState, segs: string[]): Promise<EvalListItem> {
  const has = async (f: string) => (await st.root.stat([...segs, f])) !== undefined;
  const report = await reportOf(st, segs);
  return {
    ref: segs.join("/"),
    name: segs.at(-1) ?? st.root.dir.split("/").at(-1) ?? "eval",
    hasHtml: await has("report.html"),
    runRef: (await isRun(st, [...segs, "run"])) ? [...segs, "run"].join("/") : null,
    summary: report.head ? evalSummaryOf(report.head) : {},
    bytes: report.bytes,
    ...(report.error ? { error: report.error } : {}),
  };
}

/** An eval dir's report.json (lenient, cached by size and mtime); null head: unreadable. */
async function reportOf(st: ViewStoreState, segs: string[]) {
  const file = [...segs, "report.json"];
  const fst = await st.root.stat(file);
  if (!fst) return { key: "none", head: null, bytes: 0, error: "no report.json" };
  const key = `${fst.size}.${fst.mtimeMs}`;
  const ref = segs.join("/");
  const hit = st.reports.get(ref);
  if (hit?.key === key) return { ...hit, bytes: fst.size };
  let entry: { key: string; head: ReportHead | null; error?: string };
  try {
    const p = ReportHead.safeParse(parseJson(await st.root.readText(file, CAPS.report), file.join("/")));
    entry = p.success
      ? { key, head: p.data }
      : { key, head: null, error: `report.json: ${p.error.issues[0]?.message ?? "not an eval report"}` };
  } catch (e) {
    entry = { key, head: null, error: e instanceof Error ? e.message : String(e) };
  }
  st.reports.set(ref, entry);
  return { ...entry, bytes: fst.size };
}

/**
 * A trajectory's dir: `<run>/trajectories/<id>/`, or, for the run inside an eval dir (`<eval>/run`),
 * the trial dir report.json names for it (eval moves the files there).
 */
async function trajectoryDir(st: ViewStoreState, ref: string, id: string): Promise<string[]> {
  const segs = checkedSegments(ref);
  const plain = [...segs, "trajectories", id];
  if (segs.at(-1) !== "run") return plain;
  for (const f of ["result.json", "turns.jsonl", "score.json"])
    if (await st.root.stat([...plain, f])) return plain;
  const evalSegs = segs.slice(0, -1);
  const dir = (await reportOf(st, evalSegs)).head;
  const rel = dir ? trialDirsOf(dir).get(id) : undefined;
  return rel ? [...evalSegs, ...rel] : plain;
}

/**
 * groups.jsonl's index (task → byte span of its line), built once per file version; callers at
 * the same time share one pass. A run's page starts it, so a token view opened from there
 * finds it built.
 */
async function groupIndexOf(st: ViewStoreState, segs: string[]) {
  const fst = await st.root.stat(segs);
  if (!fst) return null;
  const key = `${fst.size}.${fst.mtimeMs}`;
  const ref = segs.join("/");
  let idx = st.groupIndex.get(ref);
  if (!idx || idx.key !== key) {
    idx = { key, lines: indexGroupLines(st.root, segs, fst.size, undefined, st.opts.signal) };
    st.groupIndex.set(ref, idx);
    idx.lines.catch(() => st.groupIndex.delete(ref)); // a failed pass is retried by the next caller
  }
  return idx.lines;
}

async function groupLineOf(st: ViewStoreState, ref: string, task: string): Promise<GroupLine | null> {
  const segs = [...checkedSegments(ref), "groups.jsonl"];
  const lines = await groupIndexOf(st, segs);
  if (!lines) return null;
  const span = lines.get(task);
  if (!span) return null;
  if (st.lastGroup?.ref === ref && st.lastGroup.span === span) return st.lastGroup.line;
  st.lastGroup = { ref, span, line: await readGroupLine(st, segs, task, span) };
  return st.lastGroup.line;
}

async function readGroupLine(st: ViewStoreState, segs: string[], task: string, span: [number, number]) {
  if (span[1] - span[0] > CAPS.groupLine)
    throw new ViewPathError(`the group line of ${task} is over the ${CAPS.groupLine}-byte cap`, 413);
  const text = (await st.root.readRange(segs, span[0], span[1], CAPS.groupLine)).toString("utf8");
  const p = GroupLine.safeParse(parseJson(text, segs.join("/")));
  return p.success && p.data.group_overrides?.task_id === task ? p.data : null;
}

async function indexPage(st: ViewStoreState): ReturnType<ViewStore["index"]> {
  const found = await refsOf(st);
  const runs = await Promise.all(found.runs.map((segs) => runListItem(st, segs.join("/"))));
  runs.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const evals = await Promise.all(found.evals.map((segs) => evalItem(st, segs)));
  return { root: st.root.dir.split("/").at(-1) ?? "", runs, evals };
}

async function runPage(
  st: ViewStoreState,
  ref: Parameters<ViewStore["run"]>[0],
  q: Parameters<ViewStore["run"]>[1],
): ReturnType<ViewStore["run"]> {
  const manifest = await manifestOf(st, ref);
  const summary = await readJsonFile(st.root, [...checkedSegments(ref), "summary.json"], RunSummary);
  const { rows, skipped } = await rowsOf(st, ref, manifest.config.policies);
  const known = new Map<string, { expected?: number; atropos?: string; group?: string }>();
  for (const t of manifest.config.tasks) known.set(t, { expected: manifest.config.groupSize });
  for (const t of summary?.tasks ?? [])
    known.set(t.taskId, { expected: t.expected, atropos: t.atropos, group: t.group });
  const page = queryRows(rows, q);
  const all = groupRows(rows, known);
  const onPage = new Set(page.rows.map((r) => r.task));
  // index a finished run's groups.jsonl in the background: its token views will need it (a live
  // run's file changes all the time; its index is built when a token view asks)
  if (summary?.complete) void groupIndexOf(st, [...checkedSegments(ref), "groups.jsonl"]).catch(() => {});
  return {
    ref,
    facts: runFactsOf(manifest, summary, await lockStateOf(st.root, checkedSegments(ref))),
    stamp: await stamp(st, ref),
    groups: all.length <= q.size ? all : all.filter((g) => onPage.has(g.task)),
    groupsTotal: all.length,
    total: page.total,
    all: rows.length,
    rows: page.rows,
    skippedLines: skipped,
  };
}

async function trajectoryPage(
  st: ViewStoreState,
  ref: Parameters<ViewStore["trajectory"]>[0],
  id: Parameters<ViewStore["trajectory"]>[1],
): ReturnType<ViewStore["trajectory"]> {
  if (!SEGMENT.test(id)) throw new ViewPathError("bad trajectory id", 400);
  const manifest = await manifestOf(st, ref);
  const t = await trajectoryDir(st, ref, id);
  const result = await readJsonFile(st.root, [...t, "result.json"], TrajectoryResult);
  const score = await readJsonFile(st.root, [...t, "score.json"], Score);
  const diffSt = await st.root.stat([...t, "diff.patch"]);
  const diff = diffSt
    ? (await st.root.readRange([...t, "diff.patch"], 0, CAPS.diff, CAPS.diff)).toString("utf8")
    : null;
  const last = await lastTurn(st.root, [...t, "turns.jsonl"]);
  const task = result?.taskId ?? st.rowsCache.get(ref)?.rows.find((r) => r.id === id)?.task;
  const siblings = task
    ? (await rowsOf(st, ref, manifest.config.policies)).rows.filter((r) => r.task === task).map((r) => r.id)
    : [];
  const prov: Record<string, unknown> = {
    runId: manifest.runId,
    ...manifest.provenance,
    ...(task ? (manifest.tasks[task] ?? {}) : {}),
    seed: manifest.config.seed,
    backend: manifest.config.backend,
    ...(result ? { policy: result.policy, clineTaskId: result.clineTaskId } : {}),
  };
  return {
    ref,
    id,
    result,
    score,
    diff,
    diffTruncated: (diffSt?.size ?? 0) > CAPS.diff,
    conversation: last.conversation,
    ...(last.note ? { conversationNote: last.note } : {}),
    lastTurn: last.meta,
    provenance: prov,
    siblings: siblings.sort((a, b) => a.localeCompare(b, undefined, { numeric: true })),
  };
}

async function tokensPage(
  st: ViewStoreState,
  ref: Parameters<ViewStore["tokens"]>[0],
  id: Parameters<ViewStore["tokens"]>[1],
): ReturnType<ViewStore["tokens"]> {
  if (!SEGMENT.test(id)) throw new ViewPathError("bad trajectory id", 400);
  const manifest = await manifestOf(st, ref);
  const { rows } = await rowsOf(st, ref, manifest.config.policies);
  const task = rows.find((r) => r.id === id)?.task;
  if (!task) return { ref, id, sequences: [], note: "this trajectory has no metrics line yet" };
  const line = await groupLineOf(st, ref, task);
  if (!line) return { ref, id, sequences: [], note: "its group is not written yet (groups.jsonl)" };
  if (!line.tokens || !line.masks)
    return { ref, id, sequences: [], note: "the run has no token export (run it with --tokenizer)" };
  const sequences = (line.overrides ?? []).flatMap((o, i) => {
    if (!o || o.trajectory_id !== id) return [];
    const lp =
      line.inference_logprobs?.[i] ?? (Array.isArray(o.inference_logprobs) ? o.inference_logprobs : null);
    const tokens = line.tokens?.[i] ?? [];
    return [
      {
        segment: typeof o.segment === "number" ? o.segment : null,
        segments: typeof o.segments === "number" ? o.segments : null,
        split: typeof o.split === "string" ? o.split : null,
        score: line.scores[i] ?? null,
        tokens,
        masks: line.masks?.[i] ?? [],
        logprobs: Array.isArray(lp) && lp.every((x) => typeof x === "number") ? (lp as number[]) : null,
        text: st.opts.tokenizer ? tokens.map((t) => st.opts.tokenizer!.decode([t])) : null,
      },
    ];
  });
  return {
    ref,
    id,
    sequences,
    ...(sequences.length === 0
      ? {
          note: "no exported sequence (an infra failure, or a token export that failed: see the group's excluded list)",
        }
      : {}),
    ...(st.opts.tokenizer
      ? {}
      : { note: "token ids only: start `flakegym view --tokenizer <dir>` to decode them" }),
  };
}

async function evalHtml(
  st: ViewStoreState,
  ref: Parameters<ViewStore["evalHtml"]>[0],
): ReturnType<ViewStore["evalHtml"]> {
  return st.root.readText([...checkedSegments(ref), "report.html"], 64 * MB);
}

async function warmUp(st: ViewStoreState): ReturnType<ViewStore["warm"]> {
  try {
    // run ids start with their creation time: the last names are the newest runs
    const runs = (await runRefs(st)).slice(-WARM_RUNS);
    for (const ref of runs) await rowsOf(st, ref, (await manifestOf(st, ref)).config.policies);
    // then the finished ones' groups.jsonl index, which their token views need
    for (const ref of runs) {
      const summary = await readJsonFile(st.root, [...checkedSegments(ref), "summary.json"], RunSummary);
      if (summary?.complete) await groupIndexOf(st, [...checkedSegments(ref), "groups.jsonl"]);
    }
  } catch {
    // reading ahead is best effort: the request that needs it st.reports the error
  }
}

async function searchRun(
  st: ViewStoreState,
  ref: Parameters<ViewStore["search"]>[0],
  q: Parameters<ViewStore["search"]>[1],
  signal: Parameters<ViewStore["search"]>[2],
  expired: Parameters<ViewStore["search"]>[3],
): ReturnType<ViewStore["search"]> {
  const { rows } = await rowsOf(st, ref, (await manifestOf(st, ref)).config.policies);
  const ids = [...rows.map((r) => r.id)].sort((x, y) => x.localeCompare(y, undefined, { numeric: true }));
  const chunks = async function* (id: string) {
    yield* st.root.chunks([...(await trajectoryDir(st, ref, id)), "turns.jsonl"], SEARCH_CHUNK);
  };
  return searchTranscripts({ ids, chunks }, q, { signal, maxHits: SEARCH_HITS, expired });
}

async function comparePage(
  st: ViewStoreState,
  kind: Parameters<ViewStore["compare"]>[0],
  a: Parameters<ViewStore["compare"]>[1],
  b: Parameters<ViewStore["compare"]>[2],
  page: Parameters<ViewStore["compare"]>[3],
  size: Parameters<ViewStore["compare"]>[4],
): ReturnType<ViewStore["compare"]> {
  const found = await (kind === "runs"
    ? Promise.all(
        [a, b].map(async (ref) => (await rowsOf(st, ref, (await manifestOf(st, ref)).config.policies)).rows),
      ).then(([ra, rb]) => ({ rows: compareRuns(ra ?? [], rb ?? []), pairing: "same task" }))
    : Promise.all(
        [a, b].map(async (ref) => {
          const r = await reportOf(st, checkedSegments(ref));
          if (!r.head) throw new ViewPathError(`${ref || "."}: ${r.error ?? "no readable report.json"}`, 404);
          return r.head;
        }),
      ).then(([ra, rb]) => compareEvals(ra!, rb!)));
  return { kind, a, b, pairing: found.pairing, ...pageCompare(found.rows, page, size) };
}

async function evalFile(
  st: ViewStoreState,
  ref: Parameters<ViewStore["evalFile"]>[0],
  name: Parameters<ViewStore["evalFile"]>[1],
): ReturnType<ViewStore["evalFile"]> {
  const segs = [...checkedSegments(ref), name];
  const fst = await st.root.stat(segs);
  if (!fst) throw new ViewPathError(`${[...segs].join("/")}: not found`, 404);
  const text = (await st.root.readRange(segs, 0, CAPS.json, CAPS.json)).toString("utf8");
  return { name, text, truncated: fst.size > CAPS.json };
}

/** The last line of turns.jsonl (the whole conversation, since Cline resends it) as conversation. */
async function lastTurn(
  root: SafeRoot,
  segs: string[],
): Promise<{ conversation: ConvMessage[]; meta: Record<string, string | number> | null; note?: string }> {
  const st = await root.stat(segs);
  const none = { conversation: [], meta: null };
  if (!st || st.size === 0) return { ...none, note: "no model call logged (turns.jsonl is absent or empty)" };
  const from = Math.max(0, st.size - CAPS.lastTurn);
  const buf = await root.readRange(segs, from, st.size, CAPS.lastTurn);
  const text = buf.toString("utf8").replace(/\n+$/, "");
  const nl = text.lastIndexOf("\n");
  if (nl < 0 && from > 0) return { ...none, note: `the last model call is over ${CAPS.lastTurn} bytes` };
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text.slice(nl + 1)) as Record<string, unknown>;
  } catch {
    return { ...none, note: "the last turns.jsonl line is torn (the call is being written)" };
  }
  const meta: Record<string, string | number> = {};
  for (const k of ["seq", "startedAt", "upstream", "status"]) {
    const x = v[k];
    if (typeof x === "string" || typeof x === "number") meta[k] = x;
  }
  return { conversation: conversationOf(v as Parameters<typeof conversationOf>[0]), meta };
}
