import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { createNomadClient } from "../../src/client/client.js";
import { topicParams } from "../../src/client/events.js";
import type { EventFrame } from "../../src/client/responses.js";
import { scriptedServer } from "../helpers/http-server.js";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const frame = (index: number, status: string) => ({
  Index: index,
  Events: [
    {
      Topic: "Allocation",
      Type: "AllocationUpdated",
      Key: `alloc-${index}`,
      Namespace: "default",
      FilterKeys: ["job-1"],
      Index: index,
      Payload: { Allocation: { ID: `alloc-${index}`, JobID: "job-1", ClientStatus: status } },
    },
  ],
});

async function streamingServer(script: (res: ServerResponse) => void) {
  const srv = await scriptedServer((_r, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    script(res);
  });
  const client = createNomadClient({ address: srv.url });
  cleanup.push(
    () => srv.close(),
    () => client.close(),
  );
  return { srv, client };
}

describe("event stream", () => {
  it("yields NDJSON frames, skips {} heartbeats, ends with the stream", async () => {
    const { srv, client } = await streamingServer((res) => {
      res.write("{}\n");
      res.write(`${JSON.stringify(frame(5, "pending"))}\n{}\n`);
      // a frame split across two chunks
      const f = JSON.stringify(frame(6, "running"));
      res.write(f.slice(0, 10));
      setTimeout(() => res.end(`${f.slice(10)}\n`), 20);
    });
    const got: EventFrame[] = [];
    for await (const f of client.events.stream({ topics: { Allocation: ["job-1"], Job: [] }, index: 4 }))
      got.push(f);
    expect(got.map((f) => f.Index)).toEqual([5, 6]);
    expect(got[1]!.Events[0]!.Payload).toMatchObject({ Allocation: { ClientStatus: "running" } });
    expect(srv.seen[0]!.query.getAll("topic")).toEqual(["Allocation:job-1", "Job"]);
    expect(srv.seen[0]!.query.get("index")).toBe("4");
  });

  it("yields heartbeats when asked", async () => {
    const { client } = await streamingServer((res) => res.end("{}\n{}\n"));
    const got: EventFrame[] = [];
    for await (const f of client.events.stream({ topics: { Job: ["*"] }, heartbeats: true })) got.push(f);
    expect(got).toEqual([{ Events: [] }, { Events: [] }]);
  });

  it("ends quietly when the signal aborts, even while the server keeps the stream open", async () => {
    const { client } = await streamingServer((res) => {
      res.write(`${JSON.stringify(frame(1, "running"))}\n`);
      const t = setInterval(() => res.write("{}\n"), 10);
      res.on("close", () => clearInterval(t));
    });
    const ac = new AbortController();
    const got: number[] = [];
    for await (const f of client.events.stream({ topics: { Allocation: [] } }, { signal: ac.signal })) {
      got.push(f.Index ?? 0);
      ac.abort();
    }
    expect(got).toEqual([1]);
  });

  it("a garbage line is an error naming the line", async () => {
    const { client } = await streamingServer((res) => res.end("not json\n"));
    const it = client.events.stream({ topics: { Job: [] } });
    await expect(it.next()).rejects.toThrow("a line is not JSON: not json");
  });

  it("topic params: all keys vs filtered keys", () => {
    expect(topicParams({ Allocation: ["a", "b"], Job: [], Node: ["*"] })).toEqual([
      "Allocation:a",
      "Allocation:b",
      "Job",
      "Node:*",
    ]);
  });
});
