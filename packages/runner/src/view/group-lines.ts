import type { SafeRoot } from "./safe-read.js";

/**
 * groups.jsonl's line index: which byte span holds which task's group, found in one pass over the
 * file without parsing its (large) lines, so a token view reads one line.
 */
const MARKER = Buffer.from('"group_overrides":{"group_id":"');
const TASK_MARKER = Buffer.from('"task_id":"');

/**
 * One pass over groups.jsonl: task id → byte span of its line. Only the group_overrides head of a
 * line is looked at (a raw `":{"` cannot occur inside a JSON string, so the marker is a key).
 */
export async function indexGroupLines(
  root: SafeRoot,
  segs: string[],
  size: number,
  CHUNK = 8 * 1024 * 1024,
  signal?: AbortSignal,
): Promise<Map<string, [number, number]>> {
  const lines = new Map<string, [number, number]>();
  let lineStart = 0;
  let pending: string | undefined; // the task of the line being read, once its head was seen
  let tail = Buffer.alloc(0); // the line's last bytes before the chunk (a marker may straddle)
  for (let pos = 0; pos < size; pos += CHUNK) {
    signal?.throwIfAborted(); // a stopping viewer does not wait for the rest of a 1 GB file
    const chunk = await root.readRange(segs, pos, Math.min(size, pos + CHUNK), CHUNK);
    let buf = tail.length ? Buffer.concat([tail, chunk]) : chunk;
    let base = pos - tail.length;
    for (;;) {
      const nl = buf.indexOf(10);
      if (nl < 0) break;
      pending ??= taskOfLineHead(buf, nl);
      if (pending !== undefined) lines.set(pending, [lineStart, base + nl]);
      pending = undefined;
      lineStart = base + nl + 1;
      buf = buf.subarray(nl + 1);
      base += nl + 1;
    }
    pending ??= taskOfLineHead(buf, buf.length);
    tail = Buffer.from(buf.subarray(Math.max(0, buf.length - 4096)));
  }
  if (pending !== undefined && lineStart < size) lines.set(pending, [lineStart, size]);
  return lines;
}

function taskOfLineHead(buf: Buffer, to: number): string | undefined {
  const m = buf.indexOf(MARKER);
  if (m < 0 || m >= to) return undefined;
  const t = buf.indexOf(TASK_MARKER, m);
  if (t < 0 || t >= to) return undefined;
  const start = t + TASK_MARKER.length;
  let end = start;
  while (end < to && !(buf[end] === 0x22 && buf[end - 1] !== 0x5c)) end++;
  if (end >= to) return undefined; // cut: the next chunk has the rest
  try {
    return JSON.parse(`"${buf.subarray(start, end).toString("utf8")}"`) as string;
  } catch {
    return undefined;
  }
}
