import { esc } from "../eval/report-html.js";
import type { ChatTokenizer } from "../export/tokenizer.js";
import { writeStreamAtomic } from "../run-format/jsonl.js";
import { jsonScript, pageFrame, webAssets } from "./bundle.js";
import { RowQuery } from "./query-schema.js";
import { EvalFileName } from "./responses.js";
import { createViewStore, type ViewStore } from "./run-data.js";
import { openSafeRoot, ViewPathError } from "./safe-read.js";

/**
 * `flakegym view <dir> --export out.html`: one self-contained HTML file of a run (or of an eval):
 * the same app, with every API answer it can ask for inlined — one JSON script element per answer,
 * keyed like the app's API call — under a CSP that lets the page load nothing (no network at
 * all). The file is streamed: each answer is read, written and dropped before the next, so memory
 * stays bounded whatever the run's size; an abort stops it between answers and leaves no file.
 */
export const EXPORT_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; frame-src 'self'; base-uri 'none'; form-action 'none'";

export interface ExportOptions {
  readonly tokenizer?: ChatTokenizer;
  readonly signal?: AbortSignal;
}

/** One inlined answer: its API key (path and query, as the app asks) and value. */
export interface ExportEntry {
  readonly key: string;
  readonly value: unknown;
}

/** Every answer an exported page can ask for, one at a time (bounded memory), in page order. */
export async function* exportEntries(store: ViewStore, signal?: AbortSignal): AsyncGenerator<ExportEntry> {
  const index = await store.index();
  yield { key: "/api/index", value: index };
  const runs = index.runs.filter((r) => !r.error).map((r) => r.ref);
  for (const e of index.evals) if (e.runRef && !runs.includes(e.runRef)) runs.push(e.runRef);
  for (const ref of runs) {
    signal?.throwIfAborted();
    const all = await store.run(ref, { ...RowQuery.parse({}), size: Number.MAX_SAFE_INTEGER });
    // every row: the exported app filters, sorts and pages itself
    yield { key: `/api/run?run=${ref}`, value: all };
    for (const row of all.rows) {
      signal?.throwIfAborted();
      yield { key: `/api/trajectory?run=${ref}&id=${row.id}`, value: await store.trajectory(ref, row.id) };
      yield { key: `/api/tokens?run=${ref}&id=${row.id}`, value: await store.tokens(ref, row.id) };
    }
  }
  for (const e of index.evals) {
    if (e.hasHtml) yield { key: `/eval?ref=${e.ref}`, value: await store.evalHtml(e.ref) };
    for (const name of EvalFileName.options) {
      const f = await store.evalFile(e.ref, name).catch(() => undefined);
      if (f) yield { key: `/api/eval-file?ref=${e.ref}&name=${name}`, value: f };
    }
  }
}

/** The export's HTML, piece by piece: the page's head, one script element per answer, the app. */
async function* exportPieces(
  store: ViewStore,
  counts: { entries: number },
  signal?: AbortSignal,
): AsyncGenerator<string> {
  const { head, tail } = pageFrame(await webAssets(), EXPORT_CSP);
  yield head;
  yield jsonScript({ mode: "export" }, 'id="flakegym-boot"');
  for await (const e of exportEntries(store, signal)) {
    counts.entries++;
    yield `\n${jsonScript(e.value, `class="fg-data" data-key="${esc(e.key)}"`)}`;
  }
  yield tail;
}

export async function writeExport(dir: string, out: string, opts: ExportOptions = {}) {
  const root = await openSafeRoot(dir);
  const store = createViewStore(root, {
    ...(opts.tokenizer ? { tokenizer: opts.tokenizer } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const index = await store.index();
  if (index.runs.length === 0 && index.evals.length === 0)
    throw new ViewPathError(`${dir}: neither a run dir (run.json) nor an eval dir (report.json)`, 404);
  const counts = { entries: 0 };
  const bytes = await writeStreamAtomic(out, exportPieces(store, counts, opts.signal), opts.signal);
  return { bytes, entries: counts.entries };
}
