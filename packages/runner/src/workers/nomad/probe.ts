import { connect } from "node:net";

/**
 * "Does the core answer on its port?" A probe resolves true when it does, false when not yet
 * (the caller retries until its deadline); it never throws for an unreachable port.
 */
export type ReadinessProbe = (
  address: string,
  opts: { signal: AbortSignal; timeoutMs: number },
) => Promise<boolean>;

function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(":");
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(address.slice(i + 1)) };
}

/** TCP connect only. Under docker's port proxy this succeeds before the core listens: prefer http2Probe. */
export const tcpProbe: ReadinessProbe = (address, { signal, timeoutMs }) =>
  new Promise((resolve) => {
    const { host, port } = splitAddress(address);
    const sock = connect({ host, port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      sock.destroy();
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });

/** The HTTP/2 client connection preface followed by an empty SETTINGS frame. */
const H2_PREFACE = Buffer.concat([
  Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"),
  Buffer.from([0, 0, 0, 0x04, 0, 0, 0, 0, 0]),
]);

/**
 * gRPC runs over HTTP/2: the core answers when, after our connection preface, the server's first
 * frame is a SETTINGS frame. A port proxy with nothing behind it accepts and then closes instead.
 */
export const http2Probe: ReadinessProbe = (address, { signal, timeoutMs }) =>
  new Promise((resolve) => {
    const { host, port } = splitAddress(address);
    const sock = connect({ host, port });
    let buf = Buffer.alloc(0);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      sock.destroy();
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });
    sock.once("connect", () => sock.write(H2_PREFACE));
    sock.on("data", (b: Buffer) => {
      buf = Buffer.concat([buf, b]);
      if (buf.length >= 9) done(buf[3] === 0x04);
    });
    sock.once("error", () => done(false));
    sock.once("close", () => done(false));
  });
