import { createServer as createH2 } from "node:http2";
import type { AddressInfo } from "node:net";
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { http2Probe, tcpProbe } from "../../../src/workers/nomad/probe.js";

const servers: { close(cb: () => void): void }[] = [];
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const sock of sockets) sock.destroy();
  sockets.clear();
  for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});
const listen = async (s: Server | ReturnType<typeof createH2>) => {
  servers.push(s);
  s.on("connection", (sock: Socket) => sockets.add(sock));
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `127.0.0.1:${(s.address() as AddressInfo).port}`;
};
const opts = () => ({ signal: AbortSignal.timeout(5_000), timeoutMs: 1_000 });

describe("readiness probes", () => {
  it("http2Probe: true for an HTTP/2 (gRPC) server", async () => {
    const addr = await listen(createH2());
    expect(await http2Probe(addr, opts())).toBe(true);
    expect(await tcpProbe(addr, opts())).toBe(true);
  });

  it("a port proxy with nothing behind it (accepts, then closes) passes TCP but not http2Probe", async () => {
    const addr = await listen(createServer((sock) => sock.destroy()));
    expect(await tcpProbe(addr, opts())).toBe(true);
    expect(await http2Probe(addr, opts())).toBe(false);
  });

  it("a silent listener times out; a closed port is refused", async () => {
    const silent = await listen(createServer(() => {}));
    const t0 = Date.now();
    expect(await http2Probe(silent, { signal: AbortSignal.timeout(5_000), timeoutMs: 200 })).toBe(false);
    expect(Date.now() - t0).toBeLessThan(2_000);
    const s = createServer();
    const addr = await listen(s);
    servers.pop();
    await new Promise<void>((r) => s.close(() => r()));
    expect(await tcpProbe(addr, opts())).toBe(false);
    expect(await http2Probe(addr, opts())).toBe(false);
  });
});
