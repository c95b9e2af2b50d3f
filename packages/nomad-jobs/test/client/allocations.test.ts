import { afterEach, describe, expect, it } from "vitest";
import { createNomadClient } from "../../src/client/client.js";
import { json, scriptedServer, text } from "../helpers/http-server.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("allocations", () => {
  it("signal POSTs {Signal, Task} to /v1/client/allocation/:id/signal, once (never resent)", async () => {
    const srv = await scriptedServer((_r, res, n) => (n === 1 ? json(res, 200, {}) : text(res, 500, "boom")));
    const client = createNomadClient({ address: srv.url, token: "t" });
    cleanup.push(
      () => srv.close(),
      () => client.close(),
    );
    await client.allocations.signal("a1", { signal: "SIGUSR2", task: "worker" });
    const q = srv.seen[0]!;
    expect(q.method).toBe("POST");
    expect(q.path).toBe("/v1/client/allocation/a1/signal");
    expect(JSON.parse(q.body)).toEqual({ Signal: "SIGUSR2", Task: "worker" });
    // a 5xx is reported, not retried: a resend would deliver the signal twice
    await expect(
      client.allocations.signal("a1", { signal: "SIGUSR2", task: "worker" }),
    ).rejects.toMatchObject({
      status: 500,
    });
    expect(srv.seen).toHaveLength(2);
  });
});
