import { NomadError } from "./errors.js";
import { lines } from "./ndjson.js";
import type { CallOptions, RequestCore } from "./request.js";
import { EventFrame } from "./responses.js";

/**
 * `GET /v1/event/stream`: newline-delimited JSON frames `{Index, Events: [...]}`, with `{}` sent
 * as a heartbeat while nothing happens. Yields frames (heartbeats only if asked) until the server
 * ends the stream or `signal` aborts — an abort ends the iteration without an error.
 */

/** Topic → keys (`["*"]` or `[]` for all). E.g. `{ Allocation: [jobId], Job: [jobId] }`. */
export type Topics = Readonly<Record<string, readonly string[]>>;

export interface StreamRequest {
  readonly topics: Topics;
  /** Start from this index (events after it); 0 = from now on. */
  readonly index?: number;
  /** Also yield heartbeats, as frames with no Index and no Events. */
  readonly heartbeats?: boolean;
}

export function topicParams(topics: Topics): string[] {
  const out: string[] = [];
  for (const [topic, keys] of Object.entries(topics)) {
    if (keys.length === 0) out.push(topic);
    else for (const k of keys) out.push(`${topic}:${k}`);
  }
  return out;
}

export function isHeartbeat(frame: EventFrame): boolean {
  return (frame.Index ?? 0) === 0 && frame.Events.length === 0;
}

export function createEventsApi(core: RequestCore) {
  return {
    async *stream(req: StreamRequest, opts: CallOptions = {}): AsyncGenerator<EventFrame> {
      const { response } = await core.stream(
        {
          method: "GET",
          path: "/v1/event/stream",
          query: { topic: topicParams(req.topics), index: String(req.index ?? 0) },
        },
        opts,
      );
      try {
        for await (const line of lines(response)) {
          if (line.trim() === "") continue;
          let raw: unknown;
          try {
            raw = JSON.parse(line);
          } catch (cause) {
            throw new NomadError(
              "E_NOMAD_RESPONSE",
              `Nomad event stream: a line is not JSON: ${line.slice(0, 200)}`,
              {
                method: "GET",
                path: "/v1/event/stream",
                body: line,
                cause,
              },
            );
          }
          const frame = EventFrame.safeParse(raw);
          if (!frame.success) {
            const i = frame.error.issues[0]!;
            throw new NomadError(
              "E_NOMAD_RESPONSE",
              `Nomad event stream: unexpected frame: field '${i.path.join(".")}': ${i.message}`,
              { method: "GET", path: "/v1/event/stream", body: line.slice(0, 2_000) },
            );
          }
          if (isHeartbeat(frame.data) && !req.heartbeats) continue;
          yield frame.data;
        }
      } finally {
        response.destroy();
      }
    },
  };
}
export type EventsApi = ReturnType<typeof createEventsApi>;
