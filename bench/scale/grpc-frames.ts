/**
 * gRPC's length-prefixed message framing over HTTP/2 (one flag byte, a 4-byte big-endian length,
 * the message), for the scale bench's simulated core. Pure.
 */

/** One message framed (uncompressed). */
export function frameMessage(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(0, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/**
 * The whole messages at the start of `buf` and what is left over (a message still arriving).
 * A compressed message is refused: the runner's client never compresses.
 */
export function splitFrames(buf: Buffer): { messages: Buffer[]; rest: Buffer } {
  const messages: Buffer[] = [];
  let at = 0;
  while (buf.length - at >= 5) {
    if (buf[at] !== 0)
      throw new Error(`gRPC frame at byte ${at} is compressed (flag ${buf[at]}): not supported`);
    const len = buf.readUInt32BE(at + 1);
    if (buf.length - at - 5 < len) break;
    messages.push(buf.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return { messages, rest: buf.subarray(at) };
}
