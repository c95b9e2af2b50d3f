import { appendFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageHtml } from "../../src/view/bundle.js";
import { writeExport } from "../../src/view/export-html.js";
import { startViewServer, type ViewServer } from "../../src/view/server.js";
import { manifest, metrics } from "./fixture.js";

/** A real server on 127.0.0.1 over a hand-made run dir with symlinks planted in it. */
const TOKEN = "tok-123";
let root: string;
let outside: string;
let server: ViewServer;

const HOSTILE = "+</script><script>window.__pwned=1</script><!--";

/** GET with any Host header (fetch would not let a test set it). */
function get(path: string, host = `127.0.0.1:${server.port}`): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: "127.0.0.1", port: server.port, path, headers: { host } }, (res) => {
      let body = "";
      res.on("data", (c) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    r.on("error", reject);
    r.setTimeout(10_000, () => r.destroy(new Error("timed out")));
    r.end();
  });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "flakegym-view-srv-"));
  outside = await mkdtemp(join(tmpdir(), "flakegym-view-outside-"));
  const run = join(root, "runs", "r1");
  await mkdir(join(run, "trajectories", "task-a-t0"), { recursive: true });
  await writeFile(join(run, "run.json"), JSON.stringify(manifest));
  await writeFile(join(run, "metrics.jsonl"), `${JSON.stringify(metrics)}\n`);
  await mkdir(join(run, "trajectories", "task-a-t2"), { recursive: true });
  await writeFile(join(run, "trajectories", "task-a-t2", "diff.patch"), HOSTILE);
  await writeFile(join(outside, "secret.patch"), "SECRET-OUTSIDE");
  await mkdir(join(outside, "traj"), { recursive: true });
  await writeFile(join(outside, "traj", "diff.patch"), "SECRET-DIR");
  // the agent-influenced dir plants links out of the root
  await symlink(join(outside, "secret.patch"), join(run, "trajectories", "task-a-t0", "diff.patch"));
  await symlink(join(outside, "traj"), join(run, "trajectories", "task-a-t1"));
  await symlink(outside, join(root, "runs", "r2"));
  server = await startViewServer({ dir: root, token: TOKEN });
});

afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe("view server security", () => {
  it("serves the index with the token, binds loopback, and lists the run", async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?t=tok-123$/);
    const r = await get(`/api/index?t=${TOKEN}`);
    expect(r.status).toBe(200);
    const idx = JSON.parse(r.body) as { runs: { ref: string }[] };
    expect(idx.runs.map((x) => x.ref)).toEqual(["runs/r1"]); // the symlinked runs/r2 is not a run
  });

  it("refuses requests without the token and with a foreign Host", async () => {
    expect((await get("/api/index")).status).toBe(403);
    expect((await get("/")).status).toBe(403);
    expect((await get(`/api/index?t=${TOKEN}`, "attacker.example")).status).toBe(421);
    expect((await get(`/api/index?t=${TOKEN}`, `localhost:${server.port}`)).status).toBe(200);
  });

  it("refuses '..', encoded slashes and traversal in refs", async () => {
    expect((await get(`/api/../api/index?t=${TOKEN}`)).status).toBe(400);
    expect((await get(`/api%2findex?t=${TOKEN}`)).status).toBe(400);
    for (const run of ["..", "runs/..", "runs/../..", "/etc", "runs//r1", "runs\\r1"]) {
      const r = await get(`/api/run?t=${TOKEN}&run=${encodeURIComponent(run)}`);
      expect(r.status, run).toBe(400);
    }
    const r = await get(`/api/trajectory?t=${TOKEN}&run=runs/r1&id=${encodeURIComponent("../../x")}`);
    expect(r.status).toBe(400);
  });

  it("never follows a symlink: a file, a trajectory dir or a run dir linked out of the root", async () => {
    const t0 = await get(`/api/trajectory?t=${TOKEN}&run=runs/r1&id=task-a-t0`);
    expect(t0.status).toBe(200);
    expect(t0.body).not.toContain("SECRET");
    expect(JSON.parse(t0.body).diff).toBeNull();
    const t1 = await get(`/api/trajectory?t=${TOKEN}&run=runs/r1&id=task-a-t1`);
    expect(t1.body).not.toContain("SECRET");
    const r2 = await get(`/api/run?t=${TOKEN}&run=runs/r2`);
    expect(r2.status).toBe(404);
  });

  it("is read-only and answers unknown paths with 404", async () => {
    expect((await get(`/nope?t=${TOKEN}`)).status).toBe(404);
  });

  it("live: the run's stamp and rows follow appended metrics lines", async () => {
    const before = JSON.parse((await get(`/api/run?t=${TOKEN}&run=runs/r1`)).body) as {
      stamp: string;
      all: number;
    };
    await appendFile(
      join(root, "runs", "r1", "metrics.jsonl"),
      `${JSON.stringify({ ...metrics, trajectory_id: "task-a-t2", reward: 0 })}\n{"torn`,
    );
    const stamp = JSON.parse((await get(`/api/stamp?t=${TOKEN}&run=runs/r1`)).body) as { stamp: string };
    expect(stamp.stamp).not.toBe(before.stamp);
    const after = JSON.parse((await get(`/api/run?t=${TOKEN}&run=runs/r1`)).body) as {
      all: number;
      skippedLines: number;
    };
    expect(after.all).toBe(before.all + 1);
    expect(after.skippedLines).toBe(1); // the torn tail of a line being written
  });

  it("the page carries a CSP, and inlined data cannot close its script element", async () => {
    const page = await get(`/?t=${TOKEN}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain("Content-Security-Policy");
    const out = join(outside, "export.html");
    const r = await writeExport(join(root, "runs", "r1"), out);
    const html = await readFile(out, "utf8");
    expect(html).toContain("window.__pwned=1"); // the hostile diff is in the data…
    // …but the only scripts are the boot data, one element per inlined answer, and the app
    expect(html.match(/<script/gi)).toHaveLength(2 + r.entries);
    expect(html.match(/<\/script>/gi)).toHaveLength(2 + r.entries);
    expect(html).not.toContain("__pwned=1</script>");
    const served = pageHtml({ js: "void 0", css: "" }, { mode: "server" }, "default-src 'none'");
    expect(served.match(/<script/gi)).toHaveLength(2);
  });
});
