import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { modelEndpointsOf, probeEndpoint, probePolicyEndpoints } from "../../src/policy/probe.js";

/**
 * The probe refuses only an endpoint that cannot be reached (refused, unknown host, no route);
 * one that accepts a connection and then answers an HTTP error, resets, or never answers is
 * reachable: those faults are the trajectory's to classify.
 */

const servers: Server[] = [];
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

/** A port that was just free: nothing listens there, so a connect is refused. */
async function closedPortUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}

const signal = () => AbortSignal.timeout(5000);

describe("probeEndpoint", () => {
  it("an HTTP error answer is reachable", async () => {
    const url = await listen(
      createHttpServer((_req, res) => {
        res.writeHead(500);
        res.end("boom");
      }),
    );
    expect(await probeEndpoint(url, signal())).toBeUndefined();
  });

  it("a server that resets every connection is reachable", async () => {
    const url = await listen(createServer((s) => s.resetAndDestroy()));
    expect(await probeEndpoint(url, signal())).toBeUndefined();
  });

  it("a server that accepts and never answers is reachable (at once, not at the bound)", async () => {
    const url = await listen(createServer(() => {}));
    const t0 = Date.now();
    expect(await probeEndpoint(url, signal())).toBeUndefined();
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it("a refused connection is unreachable, named by its code", async () => {
    expect(await probeEndpoint(await closedPortUrl(), signal())).toBe("ECONNREFUSED");
  });

  it("an unknown host and a bad URL are unreachable", async () => {
    expect(await probeEndpoint("http://flakegym-probe.invalid:9/v1", signal())).toMatch(/^E[A-Z_]+$/);
    expect(await probeEndpoint("not a url", signal())).toBeTypeOf("string");
  });
});

describe("probePolicyEndpoints", () => {
  it("passes when the model server answers with an error, refuses a closed port naming the URL", async () => {
    const ok = await listen(
      createHttpServer((_req, res) => {
        res.writeHead(401);
        res.end();
      }),
    );
    expect(modelEndpointsOf([`openai:${ok}#m`, `openai:${ok}#n`])).toEqual([ok]);
    await expect(probePolicyEndpoints([`openai:${ok}#m`], signal())).resolves.toBeUndefined();
    const closed = await closedPortUrl();
    const err = await probePolicyEndpoints([`openai:${ok}#m`, `openai:${closed}#m`], signal()).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).toContain(closed);
    expect((err as Error).message).toContain("ECONNREFUSED");
  });
});
