import { StringDecoder } from "node:string_decoder";
import { z } from "zod";

/**
 * Transcript search across a run: each trajectory's `turns.jsonl` is read in chunks, one file after
 * another, until its first match (memory: one chunk and a short carry; time: a deadline; a newer
 * query cancels an older one). The query is plain text, never a pattern (nothing the page sends can
 * make the scan slower than a substring search), matched case-insensitively against the file as
 * written — JSON, so the query is JSON-escaped first and quotes or newlines in it match. Transcripts
 * are hostile: hits carry plain text the page puts in text nodes.
 */

export const SearchHit = z
  .object({
    id: z.string(),
    snippet: z.string().describe("text around the first match (JSON escapes as written)"),
    match: z.tuple([z.number().int(), z.number().int()]).describe("the match's [start, end) in snippet"),
  })
  .strict();
export type SearchHit = z.infer<typeof SearchHit>;

export const SearchResponse = z
  .object({
    q: z.string(),
    hits: z.array(SearchHit),
    searched: z.number().int().describe("trajectories read"),
    total: z.number().int().describe("trajectories in the run"),
    stopped: z
      .enum(["done", "hit limit", "time limit", "cancelled"])
      .describe("why the search ended: every transcript read, or not"),
  })
  .strict();
export type SearchResponse = z.infer<typeof SearchResponse>;

/** The needle for a query: as the query appears inside a JSON string, lower-cased. Pure. */
export const needleOf = (q: string) => JSON.stringify(q).slice(1, -1).toLowerCase();

const CONTEXT = 80;

/**
 * A matcher fed a file's text piece by piece: the index of the first match in the text fed so far,
 * with the snippet around it (up to {@link CONTEXT} characters either side that were at hand). Pure.
 */
export function createMatcher(q: string) {
  const needle = needleOf(q);
  let carry = "";
  return {
    feed(text: string): { snippet: string; match: [number, number] } | undefined {
      const window = carry + text;
      const at = window.toLowerCase().indexOf(needle);
      if (at >= 0) {
        const from = Math.max(0, at - CONTEXT);
        const snippet = window.slice(from, at + needle.length + CONTEXT);
        return { snippet, match: [at - from, at - from + needle.length] };
      }
      carry = window.slice(-Math.max(needle.length - 1 + CONTEXT, 0));
      return undefined;
    },
  };
}

/** What a search reads: each trajectory's transcript as chunks (the server's safe reader). */
export interface TranscriptSource {
  readonly ids: readonly string[];
  chunks(id: string): AsyncIterable<Buffer>;
}

/**
 * Searches the transcripts one after another; stops at `maxHits`, or when `signal` aborts (a newer
 * query, the viewer stopping, or the deadline the caller made: `expired` tells which). A transcript
 * that cannot be read is skipped (a trajectory still running has none).
 */
export async function searchTranscripts(
  src: TranscriptSource,
  q: string,
  o: { signal: AbortSignal; maxHits: number; expired: () => boolean },
): Promise<SearchResponse> {
  const hits: SearchHit[] = [];
  let searched = 0;
  const stop = (stopped: SearchResponse["stopped"]) => ({
    q,
    hits,
    searched,
    total: src.ids.length,
    stopped,
  });
  for (const id of src.ids) {
    if (o.signal.aborted) return stop(o.expired() ? "time limit" : "cancelled");
    const m = createMatcher(q);
    const dec = new StringDecoder("utf8");
    try {
      for await (const chunk of src.chunks(id)) {
        const found = m.feed(dec.write(chunk));
        if (found) {
          hits.push({ id, ...found });
          break;
        }
        if (o.signal.aborted) return stop(o.expired() ? "time limit" : "cancelled");
      }
    } catch {
      // no transcript (yet), or one the safe reader refuses: nothing to match in it
    }
    searched++;
    if (hits.length >= o.maxHits) return stop("hit limit");
  }
  return stop(o.signal.aborted ? (o.expired() ? "time limit" : "cancelled") : "done");
}

/**
 * A {@link TranscriptSource} over transcripts held in memory, cut into `chunkBytes` pieces; `gate`,
 * when given, is awaited before each piece (a test holds a search mid-file with it).
 */
export function memoryTranscripts(
  files: Readonly<Record<string, string>>,
  chunkBytes: number,
  gate?: () => Promise<void>,
): TranscriptSource {
  return {
    ids: Object.keys(files),
    async *chunks(id) {
      const text = files[id];
      if (text === undefined) throw new Error(`${id}: no transcript`);
      const bytes = Buffer.from(text);
      for (let at = 0; at < bytes.length; at += chunkBytes) {
        await gate?.();
        yield bytes.subarray(at, at + chunkBytes);
      }
    },
  };
}
