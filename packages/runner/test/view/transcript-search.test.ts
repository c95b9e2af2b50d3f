import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startViewServer } from "../../src/view/server.js";
import {
  createMatcher,
  memoryTranscripts,
  needleOf,
  SearchResponse,
  searchTranscripts,
} from "../../src/view/transcript-search.js";
import { tempDir } from "../helpers/temp-dir.js";
import { manifest, metrics } from "./fixture.js";

const never = () => false;

describe("the matcher", () => {
  it("matches the query as JSON writes it, case-insensitively, across chunk boundaries", () => {
    expect(needleOf('say "Hi"\nnow')).toBe('say \\"hi\\"\\nnow');
    const m = createMatcher("AssertionError");
    expect(m.feed('{"content":"... raise Assert')).toBeUndefined();
    const hit = m.feed('ionError: 1 != 2"}');
    expect(hit).toBeDefined();
    expect(hit!.snippet.slice(...hit!.match)).toBe("AssertionError");
    expect(hit!.snippet).toContain("1 != 2");
  });
  it("regex characters are plain text", () => {
    expect(createMatcher(".*").feed("abc")).toBeUndefined();
    expect(createMatcher("(a+)+$").feed("x (a+)+$ y")?.match).toEqual([2, 8]);
  });
});

describe("searchTranscripts (over the in-memory source)", () => {
  const files = {
    "t-0": `${"x".repeat(5000)}needle here`,
    "t-1": "nothing",
    "t-2": "NEEDLE at the start",
    "t-3": "<img src=x onerror=alert(1)> needle",
  };
  const ctl = () => new AbortController();
  it("lists each trajectory once, in order, with its first match; unreadable ones are skipped", async () => {
    const src = memoryTranscripts(files, 64);
    const r = await searchTranscripts({ ...src, ids: [...src.ids, "t-missing"] }, "needle", {
      signal: ctl().signal,
      maxHits: 10,
      expired: never,
    });
    expect(SearchResponse.parse(r)).toEqual(r);
    expect(r.hits.map((h) => h.id)).toEqual(["t-0", "t-2", "t-3"]);
    expect(r).toMatchObject({ searched: 5, total: 5, stopped: "done" });
    expect(r.hits[2]!.snippet).toContain("<img src=x onerror=alert(1)>"); // plain text: the page escapes
  });
  it("stops at the hit limit", async () => {
    const r = await searchTranscripts(memoryTranscripts(files, 64), "needle", {
      signal: ctl().signal,
      maxHits: 1,
      expired: never,
    });
    expect(r).toMatchObject({ hits: [{ id: "t-0" }], searched: 1, stopped: "hit limit" });
  });
  it("a newer query cancels it mid-file; the deadline's abort reads 'time limit'", async () => {
    const c = ctl();
    let chunksRead = 0;
    const gate = async () => {
      chunksRead++;
      if (chunksRead === 3) c.abort();
    };
    const r = await searchTranscripts(memoryTranscripts(files, 64, gate), "needle", {
      signal: c.signal,
      maxHits: 10,
      expired: never,
    });
    expect(r).toMatchObject({ hits: [], searched: 0, stopped: "cancelled" });
    expect(chunksRead).toBe(3);
    const t = ctl();
    t.abort();
    const timed = await searchTranscripts(memoryTranscripts(files, 64), "needle", {
      signal: t.signal,
      maxHits: 10,
      expired: () => true,
    });
    expect(timed.stopped).toBe("time limit");
  });
});

describe("/api/search on a real server", () => {
  it("finds trajectories by transcript text; refuses a query too short; snippets are JSON strings", async () => {
    await using tmp = await tempDir("flakegym-view-search-");
    const run = join(tmp.path, "runs", "r1");
    const lines = [];
    for (const [i, text] of [
      "first: ValueError raised",
      "second: all good",
      "third </script> ValueError",
    ].entries()) {
      const id = `task-a-t${i}`;
      lines.push(JSON.stringify({ ...metrics, trajectory_id: id }));
      await mkdir(join(run, "trajectories", id), { recursive: true });
      await writeFile(
        join(run, "trajectories", id, "turns.jsonl"),
        `${JSON.stringify({ messages: [{ role: "user", content: text }] })}\n`,
      );
    }
    await writeFile(
      join(run, "run.json"),
      JSON.stringify({ ...manifest, config: { ...manifest.config, groupSize: 3 } }),
    );
    await writeFile(join(run, "metrics.jsonl"), `${lines.join("\n")}\n`);
    const server = await startViewServer({ dir: tmp.path, token: "tk" });
    try {
      const get = (qs: string) =>
        fetch(`http://127.0.0.1:${server.port}/api/search?${qs}`, { headers: { "x-flakegym-token": "tk" } });
      const res = await get(`run=runs/r1&q=${encodeURIComponent("valueerror")}`);
      expect(res.status).toBe(200);
      const body = SearchResponse.parse(await res.json());
      expect(body).toMatchObject({ total: 3, searched: 3, stopped: "done" });
      expect(body.hits.map((h) => h.id)).toEqual(["task-a-t0", "task-a-t2"]);
      expect(body.hits[1]!.snippet).toContain("</script>");
      expect((await get("run=runs/r1&q=x")).status).toBe(400);
      expect((await get("run=runs/nope&q=abc")).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
