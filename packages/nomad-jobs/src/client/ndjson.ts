import type { Readable } from "node:stream";

/**
 * Splits a byte stream into lines (UTF-8, `\n`-separated; a trailing line without `\n` is
 * yielded too). Ends when the stream ends or is destroyed; a destroyed stream (abort) ends the
 * iteration quietly.
 */
export async function* lines(stream: Readable): AsyncGenerator<string> {
  let buf = "";
  try {
    for await (const chunk of stream) {
      buf += typeof chunk === "string" ? chunk : (chunk as Buffer).toString("utf8");
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        yield line;
        nl = buf.indexOf("\n");
      }
    }
  } catch (err) {
    if (!stream.destroyed) throw err;
    return;
  }
  if (buf.length > 0) yield buf;
}
