import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { createServer as createHttp2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createNomadClient } from "@flakegym/nomad-jobs";
import { describe, expect, it } from "vitest";
import { collectGarbageEvery } from "../../../../nomad-jobs/test/helpers/gc.js";
import { collectFromAllocation } from "../../../src/workers/nomad/artifacts.js";
import { tempDir } from "../../helpers/temp-dir.js";

describe("collectFromAllocation's deadline", () => {
  it("ends a collection whose supervisor never answers, while garbage collections run, naming the limit; nothing is left", async () => {
    const gate = createHttp2Server();
    let asked = 0;
    gate.on("stream", (stream) => {
      stream.on("error", () => {});
      asked++; // accepted and never answered
    });
    await new Promise<void>((r) => gate.listen(0, "127.0.0.1", r));
    const agentAddress = `127.0.0.1:${(gate.address() as AddressInfo).port}`;
    // Nomad is never asked before the diff: an address nothing listens on
    const client = createNomadClient({ address: "http://127.0.0.1:9", retry: { attempts: 1 } });
    const tmp = await tempDir("flakegym-artifacts-");
    const stopGc = collectGarbageEvery();
    try {
      const caller = new AbortController(); // never aborts: only the collection's timeoutMs can end it
      const dest = join(tmp.path, "never-written");
      const t0 = performance.now();
      const err = await collectFromAllocation(
        client,
        "alloc-1",
        { taskId: "", dest, signal: caller.signal, timeoutMs: 1_000 },
        { seq: 1, agentAddress, agentToken: "tok" },
      ).catch((e: unknown) => e);
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect((err as Error).message).toMatch(
        /no diff within the artifact collection's timeoutMs \(1000 ms\)/,
      );
      expect(asked).toBe(1);
      expect(existsSync(dest)).toBe(false);
      expect(await readdir(tmp.path)).toEqual([]); // the temp dir of the collection is gone too
    } finally {
      stopGc();
      client.close();
      gate.close();
      await tmp.cleanup();
    }
  });
});
