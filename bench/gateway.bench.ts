/**
 * `npm run bench -- gateway [flags]`: latency the policy gateway adds to a streamed chat completion,
 * at 1 and 64 concurrent streams. Goal (issue 4): p50 ≤ 2 ms and p99 ≤ 10 ms added.
 *
 * Laid out as in production, one process each: the upstream (a vLLM-shaped double,
 * bench/gateway/upstream.ts), the runner's process with its gateway started as `flakegym rollout`
 * starts it (bench/gateway/gateway.ts: in the gateway's own thread, or on the runner's event loop
 * for revisions before it had one; with `--baseline <rev>` a second one running that revision's
 * code) and the runner's other work on its loop (the cores' message streams), and the load
 * generator standing in for the Cline cores (bench/gateway/load.ts). This process only orchestrates. The same load generator calls the
 * upstream directly and through each gateway, in alternating phases of the same run, with the same
 * Cline-sized request; "added" is gateway minus direct.
 *
 * Scenarios: `paced` — vLLM-like continuous batching, one token per chunk for every running stream
 * each decode step (`--interval-ms`); `burst` — the whole answer at once (worst case for a proxy's
 * CPU per byte). With more than one stream, each stream is a closed loop of calls whose starts are
 * spread over one call, with a short random pause between calls (an agent runs a tool between two
 * model calls), so calls arrive out of phase as agents' do (see load.ts).
 *
 * Flags: --chunks N (sampled tokens per call, 40) --interval-ms N (decode step, 20) --prompt-kb N (64)
 *   --think-ms N (a random pause of up to N ms between a stream's calls, the agent running its tool;
 *   0: back to back, 50)
 *   --calls N (counted calls per target per row: 200 at 1 stream, 1280 at 64) --streams 1,64
 *   --scenarios paced,burst --baseline <git rev> --gateway-node-args="<node flags for the gateways>"
 *   --passthrough (also a minimal pass-through proxy, bench/gateway/passthrough.ts: the CPU-per-call
 *   baseline; compare CPU with --core-streams off, which leaves the gateway's process only the gateway)
 *   --arrangements thread,loop (this checkout's gateway in its own thread — production — and/or on
 *   the runner's loop; default thread) --core-streams off (no cores' streams to the runner).
 * BENCH_PROFILE=gateway|baseline runs that gateway child with --cpu-prof (profile in the OS temp dir).
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CallTiming } from "./gateway/load.js";
import { type BenchContext, percentile, printTable } from "./lib.js";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, "..");

function flag(args: string[], name: string, def: string): string {
  const inline = args.find((a) => a.startsWith(`--${name}=`));
  if (inline) return inline.slice(name.length + 3);
  const i = args.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = args[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`bench gateway: --${name} needs a value`);
  return v;
}
function numFlag(args: string[], name: string, def: number): number {
  const v = Number(flag(args, name, String(def)));
  if (!Number.isFinite(v) || v < 0) throw new Error(`bench gateway: --${name} must be a number ≥ 0`);
  return v;
}

type Msg = Record<string, unknown>;

/** A bench child on IPC: `ask` sends a message and resolves with the reply carrying `key`. */
class Child {
  private waiting: { key: string; resolve: (m: Msg) => void; reject: (e: Error) => void }[] = [];
  private exited: Error | undefined;
  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    proc.on("message", (m: Msg) => {
      const w = this.waiting.findIndex((x) => x.key in m || "error" in m);
      if (w < 0) return;
      const [waiter] = this.waiting.splice(w, 1);
      if ("error" in m) waiter!.reject(new Error(`bench child ${name}: ${String(m["error"])}`));
      else waiter!.resolve(m[waiter!.key] as Msg);
    });
    proc.on("exit", (code, sig) => {
      this.exited = new Error(`bench child ${name} exited (${code ?? sig}) while the bench needed it`);
      for (const w of this.waiting.splice(0)) w.reject(this.exited);
    });
  }
  next(key: string): Promise<Msg> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => this.waiting.push({ key, resolve, reject }));
  }
  ask(key: string, msg: Msg): Promise<Msg> {
    const p = this.next(key);
    this.proc.send(msg);
    return p;
  }
  stop(): void {
    if (this.proc.connected) this.proc.disconnect();
  }
}

function startChild(
  name: string,
  script: string,
  args: string[],
  profile: boolean,
  nodeArgs: string[] = [],
): Child {
  const execArgv = ["--import", "tsx", ...nodeArgs];
  if (profile) execArgv.push("--cpu-prof", "--cpu-prof-dir", join(tmpdir(), "flakegym-bench-gateway-prof"));
  const proc = fork(join(here, "gateway", script), args, {
    execArgv,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Child(name, proc);
}

/** Extracts `packages/runner/src` of a git revision under bench/out, for a side-by-side baseline. */
function extractRevision(rev: string): { src: string; label: string } {
  let sha: string;
  try {
    sha = execFileSync("git", ["rev-parse", "--verify", `${rev}^{commit}`], {
      cwd: repoRoot,
      encoding: "utf8",
    }).trim();
  } catch {
    throw new Error(`bench gateway: --baseline '${rev}' is not a git revision of this repository`);
  }
  const dir = join(repoRoot, "bench", "out", `.baseline-${sha.slice(0, 12)}`);
  const src = join(dir, "packages", "runner", "src");
  if (!existsSync(join(src, "gateway", "server.ts"))) {
    const tmp = `${dir}.tmp-${process.pid}`;
    mkdirSync(tmp, { recursive: true });
    const tar = execFileSync("git", ["archive", "--format=tar", sha, "packages/runner/src"], {
      cwd: repoRoot,
      maxBuffer: 256 * 1024 * 1024,
    });
    execFileSync("tar", ["-x", "-C", tmp], { input: tar });
    rmSync(dir, { recursive: true, force: true });
    execFileSync("mv", [tmp, dir]);
  }
  return { src, label: `${rev}@${sha.slice(0, 8)}` };
}

interface Target {
  readonly name: string;
  readonly routes: readonly { readonly url: string; readonly token: string }[];
  /** The runner process the cores' streams go to. */
  readonly runner: { readonly host: string; readonly port: number };
}

/** What a target's calls measured, ms (see load.ts for the stamps). */
class Samples {
  readonly ttfb: number[] = [];
  /** Wall time of each call, as the client saw it. */
  readonly total: number[] = [];
  /** Request to upstream plus last token to client: the time a path adds to a call. */
  readonly overhead: number[] = [];
  /** The request's trip to the upstream alone. */
  readonly request: number[] = [];
  /** Every chunk's trip from the upstream's write to the client's read. */
  readonly chunk: number[] = [];
  /** `overhead` and `total` of even and odd phases: the direct path's A/A noise. */
  readonly halves = { overhead: [[], []] as number[][], total: [[], []] as number[][] };
  add(t: CallTiming, phase: number): void {
    const overhead = t.request + t.chunks[t.chunks.length - 1]!;
    this.ttfb.push(t.ttfb);
    this.total.push(t.total);
    this.overhead.push(overhead);
    this.request.push(t.request);
    for (const c of t.chunks) this.chunk.push(c);
    this.halves.overhead[phase % 2]!.push(overhead);
    this.halves.total[phase % 2]!.push(t.total);
  }
}

const p50 = (v: number[]) => percentile(v, 50);
const p99 = (v: number[]) => percentile(v, 99);
const pair = (a: number, b: number) => `${a.toFixed(1)}|${b.toFixed(1)}`;

const loadStr = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

/** The label of the pass-through proxy's rows (`--passthrough`). */
export const PASSTHROUGH = "pass-through proxy";

/** Gateway CPU per call over the pass-through proxy's, per row of the same upstream and streams. */
export function cpuRatios(rows: readonly Record<string, string | number>[], gateway: string) {
  return rows
    .filter((r) => r["gateway"] === gateway)
    .map((r) => {
      const base = rows.find(
        (b) =>
          b["gateway"] === PASSTHROUGH && b["upstream"] === r["upstream"] && b["streams"] === r["streams"],
      );
      const ours = r["CPU ms/call"] as number;
      const theirs = base ? (base["CPU ms/call"] as number) : Number.NaN;
      return { upstream: r["upstream"], streams: r["streams"], ours, theirs, ratio: ours / theirs };
    });
}

export async function main(ctx: BenchContext, args: string[]): Promise<Record<string, unknown>> {
  const chunks = numFlag(args, "chunks", 40);
  const intervalMs = numFlag(args, "interval-ms", 20);
  const promptKb = numFlag(args, "prompt-kb", 64);
  const thinkMs = numFlag(args, "think-ms", 50);
  const callsFlag = args.includes("--calls") ? numFlag(args, "calls", 0) : undefined;
  const streamsList = flag(args, "streams", "1,64").split(",").map(Number);
  const scenarios = flag(args, "scenarios", "paced,burst").split(",");
  for (const s of scenarios)
    if (s !== "paced" && s !== "burst")
      throw new Error(`bench gateway: unknown scenario '${s}' (paced, burst)`);
  const baselineRev = args.some((a) => a === "--baseline" || a.startsWith("--baseline="))
    ? flag(args, "baseline", "")
    : undefined;
  const baseline = baselineRev ? extractRevision(baselineRev) : undefined;
  const ourSrc = join(repoRoot, "packages", "runner", "src");
  const profile = process.env["BENCH_PROFILE"];
  const arrangements = flag(args, "arrangements", "thread").split(",");
  for (const a of arrangements)
    if (a !== "thread" && a !== "loop")
      throw new Error(`bench gateway: unknown arrangement '${a}' (thread, loop)`);
  const coreStreams = flag(args, "core-streams", "on") !== "off";
  const passthrough = args.includes("--passthrough");
  const gatewayNodeArgs = flag(args, "gateway-node-args", "")
    .split(" ")
    .filter((a) => a !== "");

  const children: Child[] = [];
  const logDir = mkdtempSync(join(tmpdir(), "fg-bench-gw-"));
  const rows: Record<string, string | number>[] = [];
  const result: Record<string, unknown> = {
    chunks,
    intervalMs,
    promptKb,
    thinkMs,
    baseline: baseline?.label,
    arrangements,
    coreStreams,
    loadAvgStart: loadavg(),
    cores: (await import("node:os")).cpus().length,
  };
  console.log(`load average at start (1/5/15 min): ${loadStr()} on ${result["cores"]} cores`);
  const t0 = performance.now();
  try {
    const load = startChild("load", "load.ts", [String(promptKb)], false);
    children.push(load);
    const { bodyBytes } = await load.next("ready");
    result["requestBytes"] = bodyBytes;
    for (const scenario of scenarios) {
      const up = startChild(
        "upstream",
        "upstream.ts",
        [scenario, String(chunks), String(intervalMs), String(Math.round(promptKb * 256))],
        false,
      );
      children.push(up);
      const { baseUrl } = (await up.next("ready")) as { baseUrl: string };
      const maxStreams = Math.max(...streamsList);
      type Runner = { host: string; port: number };
      const gateways: {
        label: string;
        child: Child;
        routes: { url: string; token: string }[];
        runner: Runner;
      }[] = [];
      const variants = [
        ...arrangements.map((a) => ({ label: `gateway (${a})`, src: ourSrc, loop: a === "loop" })),
        ...(baseline ? [{ label: `baseline ${baseline.label}`, src: baseline.src, loop: false }] : []),
        ...(passthrough ? [{ label: PASSTHROUGH, src: "", loop: false }] : []),
      ];
      for (const [i, v] of variants.entries()) {
        const child =
          v.label === PASSTHROUGH
            ? startChild(v.label, "passthrough.ts", [baseUrl, String(maxStreams)], false)
            : startChild(
                v.label,
                "gateway.ts",
                [
                  v.src,
                  baseUrl,
                  String(maxStreams),
                  join(logDir, `${scenario}-${i}`),
                  ...(v.loop ? ["loop"] : []),
                ],
                profile === (v.src === ourSrc ? "gateway" : "baseline"),
                gatewayNodeArgs,
              );
        children.push(child);
        const ready = (await child.next("ready")) as {
          routes: { url: string; token: string }[];
          runner: Runner;
          arrangement: string;
        };
        const label =
          v.src === ourSrc || v.label === PASSTHROUGH ? v.label : `${v.label} (${ready.arrangement})`;
        gateways.push({ label, child, routes: ready.routes, runner: ready.runner });
      }
      for (const streams of streamsList) {
        // through a gateway, each stream is its own trajectory (route, turn log), as each Cline core is
        // the cores' streams go to the runner of the gateway measured (in direct phases, the first one's)
        const flat: Target[] = [
          { name: "direct", routes: [{ url: baseUrl, token: "none" }], runner: gateways[0]!.runner },
          ...gateways.map((g) => ({ name: g.label, routes: g.routes.slice(0, streams), runner: g.runner })),
        ];
        const one = streams === 1;
        const callsPerPhase = one ? 10 : 2;
        const wanted = callsFlag ?? (one ? 200 : 1280);
        const phases = Math.max(2, Math.ceil(wanted / (callsPerPhase * streams)));
        // warm up (JIT, keep-alive sockets) and time a direct call for the stagger
        let staggerMs = 0;
        for (const t of flat) {
          const w = (await load.ask("phase", {
            phase: {
              routes: t.routes,
              streams,
              calls: one ? (scenario === "burst" ? 100 : 20) : 1,
              staggerMs: 0,
              thinkMs,
              ...(coreStreams ? { runner: t.runner } : {}),
            },
          })) as {
            samples: CallTiming[];
          };
          if (t.name === "direct") staggerMs = p50(w.samples.map((s) => s.total));
        }
        const samples = new Map<string, Samples>(flat.map((t) => [t.name, new Samples()]));
        const cpu0 = new Map<string, Msg>();
        for (const g of gateways) cpu0.set(g.label, await g.child.ask("stats", { stats: true }));
        const upCpu0 = await up.ask("stats", { stats: true });
        const rowStart = performance.now();
        for (let p = 0; p < phases; p++) {
          // rotate the order so that drift hits every target alike
          for (let k = 0; k < flat.length; k++) {
            const t = flat[(p + k) % flat.length]!;
            const r = (await load.ask("phase", {
              phase: {
                routes: t.routes,
                streams,
                calls: callsPerPhase,
                staggerMs,
                thinkMs,
                ...(coreStreams ? { runner: t.runner } : {}),
              },
            })) as { samples: CallTiming[] };
            const s = samples.get(t.name)!;
            for (const timing of r.samples) s.add(timing, p);
          }
          if (p % Math.max(1, Math.ceil(phases / 4)) === 0 || p === phases - 1)
            process.stderr.write(
              `  ${scenario} ${streams} stream(s): phase ${p + 1}/${phases} (load ${loadStr()})\n`,
            );
        }
        const rowSeconds = (performance.now() - rowStart) / 1000;
        const upCpu1 = await up.ask("stats", { stats: true });
        const d = samples.get("direct")!;
        const aa = {
          overhead: {
            p50: Math.abs(p50(d.halves.overhead[0]!) - p50(d.halves.overhead[1]!)),
            p99: Math.abs(p99(d.halves.overhead[0]!) - p99(d.halves.overhead[1]!)),
          },
          total: {
            p50: Math.abs(p50(d.halves.total[0]!) - p50(d.halves.total[1]!)),
            p99: Math.abs(p99(d.halves.total[0]!) - p99(d.halves.total[1]!)),
          },
        };
        const key = `${scenario}-${streams}`;
        const summary = (s: Samples) => ({
          n: s.total.length,
          overhead: { p50: p50(s.overhead), p99: p99(s.overhead) },
          request: { p50: p50(s.request), p99: p99(s.request) },
          chunk: { p50: p50(s.chunk), p99: p99(s.chunk) },
          total: { p50: p50(s.total), p99: p99(s.total) },
          ttfb: { p50: p50(s.ttfb), p99: p99(s.ttfb) },
        });
        const rowResult: Record<string, unknown> = {
          streams,
          phases,
          seconds: rowSeconds,
          loadAvgEnd: loadavg(),
          staggerMs,
          direct: { ...summary(d), aaNoise: aa },
          upstreamCpuMs: cpuMs(upCpu0, upCpu1),
        };
        for (const g of gateways) {
          const s = samples.get(g.label)!;
          const c1 = await g.child.ask("stats", { stats: true });
          const c0 = cpu0.get(g.label)!;
          const calls = (c1["calls"] as number) - (c0["calls"] as number);
          const cpuPerCall = cpuMs(c0, c1) / Math.max(1, calls);
          const added = {
            p50: p50(s.overhead) - p50(d.overhead),
            p99: p99(s.overhead) - p99(d.overhead),
            requestP50: p50(s.request) - p50(d.request),
            requestP99: p99(s.request) - p99(d.request),
            chunkP50: p50(s.chunk) - p50(d.chunk),
            chunkP99: p99(s.chunk) - p99(d.chunk),
            wallP50: p50(s.total) - p50(d.total),
            wallP99: p99(s.total) - p99(d.total),
            ttfbP50: p50(s.ttfb) - p50(d.ttfb),
          };
          rowResult[g.label] = { ...summary(s), added, cpuMsPerCall: cpuPerCall };
          rows.push({
            upstream: scenario,
            streams,
            gateway: g.label,
            n: s.total.length,
            "added p50": added.p50,
            "added p99": added.p99,
            "A/A p50|p99": pair(aa.overhead.p50, aa.overhead.p99),
            "request added p50|p99": pair(added.requestP50, added.requestP99),
            "chunk added p50|p99": pair(added.chunkP50, added.chunkP99),
            "wall added p50|p99": pair(added.wallP50, added.wallP99),
            "wall A/A p50|p99": pair(aa.total.p50, aa.total.p99),
            "wall ratio p50": p50(s.total) / p50(d.total),
            "CPU ms/call": cpuPerCall,
            load1: loadavg()[0]!,
          });
        }
        result[key] = rowResult;
      }
      for (const c of [up, ...gateways.map((g) => g.child)]) c.stop();
    }
    result["loadAvgEnd"] = loadavg();
    result["seconds"] = (performance.now() - t0) / 1000;
    console.log(
      [
        "",
        `policy gateway: latency added per streamed call, ms — ${chunks} tokens a call, one a chunk; paced = one decode step every ${intervalMs} ms for all streams; ${(Number(result["requestBytes"]) / 1024).toFixed(0)} KiB request; up to ${thinkMs} ms between a stream's calls; turn logs on;`,
        `  the cores' streams to the runner ${coreStreams ? "on (a partial message a chunk, the whole state at each call's start and end)" : "off"}. thread = the gateway in its own thread (production), loop = on the runner's event loop.`,
        "  added = request→upstream + last token→client, from the upstream's clock stamps (gateway minus direct);",
        "  request added = the first part alone; chunk added = every chunk's upstream→client trip; wall = the client's call time (includes the upstream's",
        "  decode-step jitter); A/A = the direct path's own difference between even and odd phases (the noise floor).",
      ].join("\n"),
    );
    printTable(rows);
    console.log(
      `\nload average at end (1/5/15 min): ${loadStr()}; ${(result["seconds"] as number).toFixed(0)} s`,
    );
    // the goal holds for a gateway when it has paced rows and every one of them meets it
    const verdict = (mine: (gateway: string) => boolean) => {
      const paced = rows.filter((r) => r["upstream"] === "paced" && mine(String(r["gateway"])));
      return (
        paced.length > 0 &&
        paced.every((r) => (r["added p50"] as number) <= 2 && (r["added p99"] as number) <= 10)
      );
    };
    const ok = verdict((g) => g === `gateway (${arrangements[0]})`);
    const pacedRan = rows.some((r) => r["upstream"] === "paced");
    if (pacedRan)
      console.log(
        `goal (paced upstream) p50 ≤ 2 ms, p99 ≤ 10 ms added: ${ok ? "met" : "NOT met"}${baseline ? `; baseline ${verdict((g) => g.startsWith(`baseline ${baseline.label}`)) ? "met" : "NOT met"}` : ""}`,
      );
    if (passthrough)
      for (const c of cpuRatios(rows, `gateway (${arrangements[0]})`))
        console.log(
          `CPU per call, ${c.upstream} ${c.streams} stream(s): gateway ${c.ours.toFixed(3)} ms vs pass-through ${c.theirs.toFixed(3)} ms = ${c.ratio.toFixed(2)}× (goal ≤ 1.25×)`,
        );
    const out = { ...result, rows, goalMet: pacedRan ? ok : null };
    ctx.writeResult("gateway", out);
    return out;
  } finally {
    for (const c of children) c.stop();
    rmSync(logDir, { recursive: true, force: true });
  }
}

function cpuMs(a: Msg, b: Msg): number {
  const ca = a["cpu"] as NodeJS.CpuUsage;
  const cb = b["cpu"] as NodeJS.CpuUsage;
  return (cb.user - ca.user + cb.system - ca.system) / 1000;
}
