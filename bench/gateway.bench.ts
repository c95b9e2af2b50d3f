/**
 * `npm run bench -- gateway [--calls N] [--chunks N]`: latency the policy gateway adds to a
 * streamed chat completion. The same client calls the same upstream (an OpenAI-compatible server
 * double streaming `chunks` SSE chunks) directly and through the gateway (which parses, re-encodes,
 * watches and logs every call to turns.jsonl), interleaved in one run, at 1 and 64 concurrent
 * streams. Upstream, gateway and client run in separate processes. Goal: p50 ≤ 2 ms and p99 ≤ 10 ms
 * added.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type BenchContext, percentile, printTable } from "./lib.js";

const here = dirname(fileURLToPath(import.meta.url));

function flag(args: string[], name: string, def: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
}

async function startChild(args: string[], children: ChildProcess[]): Promise<Record<string, unknown>> {
  const prof =
    process.env["BENCH_PROFILE"] === args[0]
      ? ["--cpu-prof", "--cpu-prof-dir", join(tmpdir(), "flakegym-bench-gateway-prof")]
      : [];
  const child = spawn(
    process.execPath,
    [...prof, "--import", "tsx", join(here, "gateway", "servers.ts"), ...args],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  children.push(child);
  const rl = createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    rl.once("line", resolve);
    child.once("exit", (code) =>
      reject(new Error(`bench child ${args[0]} exited with ${code} before it was ready`)),
    );
  });
  return JSON.parse(line) as Record<string, unknown>;
}

const BODY = JSON.stringify({
  model: "bench",
  messages: [
    { role: "system", content: "You are Cline.".repeat(200) },
    { role: "user", content: [{ type: "text", text: "<task>benchmark</task>" }] },
  ],
  stream: true,
  stream_options: { include_usage: true },
  temperature: 0,
});

/** One streamed call; returns [time to first byte, total] in ms. */
async function streamOnce(url: string, token: string): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: BODY,
  });
  if (!res.ok || !res.body)
    throw new Error(`bench call to ${url} failed: HTTP ${res.status} ${await res.text()}`);
  let ttfb = -1;
  let tail = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    if (ttfb < 0) ttfb = performance.now() - t0;
    tail = (tail + decoder.decode(chunk, { stream: true })).slice(-32);
  }
  if (!tail.includes("[DONE]")) throw new Error(`bench stream from ${url} ended without [DONE]`);
  return [ttfb, performance.now() - t0];
}

interface Sample {
  ttfb: number[];
  total: number[];
}

async function round(targets: { url: string; token: string }[], into: Sample): Promise<void> {
  const results = await Promise.all(targets.map((t) => streamOnce(t.url, t.token)));
  for (const [ttfb, total] of results) {
    into.ttfb.push(ttfb);
    into.total.push(total);
  }
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const calls = flag(args, "calls", 640);
  const chunks = flag(args, "chunks", 20);
  const intervalMs = flag(args, "interval-ms", 5);
  const children: ChildProcess[] = [];
  const logDir = mkdtempSync(join(tmpdir(), "fg-bench-gw-"));
  const rows: Record<string, string | number>[] = [];
  const result: Record<string, unknown> = { calls, chunks, intervalMs };
  try {
    // paced: the upstream streams like a model sampling (a chunk every intervalMs);
    // burst: it sends everything at once, the worst case for a proxy's CPU.
    for (const [name, pace] of [
      ["paced", intervalMs],
      ["burst", 0],
    ] as const) {
      const up = (await startChild(["upstream", String(chunks), "8", String(pace)], children)) as {
        baseUrl: string;
      };
      const gw = (await startChild(["gateway", up.baseUrl, "64", join(logDir, name)], children)) as {
        routes: { url: string; token: string }[];
      };
      for (const concurrency of [1, 64]) {
        const direct: Sample = { ttfb: [], total: [] };
        const viaGw: Sample = { ttfb: [], total: [] };
        const directTargets = Array.from({ length: concurrency }, () => ({ url: up.baseUrl, token: "none" }));
        const gwTargets = gw.routes.slice(0, concurrency);
        // warm up both paths (connections, JIT)
        for (let i = 0; i < 5; i++) {
          await round(directTargets, { ttfb: [], total: [] });
          await round(gwTargets, { ttfb: [], total: [] });
        }
        const rounds = Math.max(10, Math.ceil(calls / concurrency));
        for (let i = 0; i < rounds; i++) {
          // alternate the order so drift hits both sides alike
          if (i % 2) {
            await round(directTargets, direct);
            await round(gwTargets, viaGw);
          } else {
            await round(gwTargets, viaGw);
            await round(directTargets, direct);
          }
          if (i % Math.ceil(rounds / 4) === 0)
            process.stderr.write(`  ${name} c=${concurrency}: round ${i + 1}/${rounds}\n`);
        }
        const stats = (s: number[]) => ({ p50: percentile(s, 50), p99: percentile(s, 99) });
        const d = stats(direct.total);
        const g = stats(viaGw.total);
        const dT = stats(direct.ttfb);
        const gT = stats(viaGw.ttfb);
        result[`${name}-c${concurrency}`] = {
          direct: { total: d, ttfb: dT },
          gateway: { total: g, ttfb: gT },
          n: direct.total.length,
        };
        rows.push({
          upstream: name,
          streams: concurrency,
          calls: direct.total.length,
          "direct p50 ms": d.p50,
          "gateway p50 ms": g.p50,
          "added p50 ms": g.p50 - d.p50,
          "direct p99 ms": d.p99,
          "gateway p99 ms": g.p99,
          "added p99 ms": g.p99 - d.p99,
          "ratio p50": g.p50 / d.p50,
        });
      }
      for (const c of children.splice(0)) c.kill("SIGTERM");
    }
    console.log(
      `\npolicy gateway: added latency per streamed call (${chunks} SSE chunks; paced = one every ${intervalMs} ms; turn log on)`,
    );
    printTable(rows);
    const paced = rows.filter((r) => r["upstream"] === "paced");
    const ok = paced.every((r) => (r["added p50 ms"] as number) <= 2 && (r["added p99 ms"] as number) <= 10);
    console.log(`\ngoal (paced upstream) p50 ≤ 2 ms, p99 ≤ 10 ms added: ${ok ? "met" : "NOT met"}`);
    ctx.writeResult("gateway", { ...result, rows, goalMet: ok });
  } finally {
    for (const c of children) c.kill("SIGTERM");
    rmSync(logDir, { recursive: true, force: true });
  }
}
