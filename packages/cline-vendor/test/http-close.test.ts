import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { closeHttpServers } from "../src/http-close.js";

describe("closeHttpServers", () => {
  it("resolves while a client still holds an open streaming response, and the servers stop listening", async () => {
    const srv = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: first\n\n"); // never ended
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
    const res = await fetch(url);
    const reader = res.body!.getReader();
    await reader.read();
    await closeHttpServers([srv]);
    expect(srv.listening).toBe(false);
    await expect(reader.read()).rejects.toThrow();
  });
});
