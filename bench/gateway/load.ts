/**
 * Child process of `npm run bench -- gateway`: the load generator, standing in for the Cline cores
 * (other processes in production). It sends Cline-sized streamed chat requests over keep-alive
 * HTTP/1.1 and times each call: time to the first byte and to the end of the stream (`[DONE]`).
 *
 * Protocol (IPC), answered in order:
 *   `{ phase: { routes: [{ url, token }], streams, calls, staggerMs, thinkMs, runner } }` → `{ phase: { samples: CallTiming[] } }`
 * With `runner` (an address of the gateway process, bench/gateway/gateway.ts), each stream also
 * plays its Cline core's stream to the runner, as the driver subscribes to it (FACTS: partial
 * messages, and every state update resends the whole state): a partial message per chunk read, the
 * whole state (here: the request, as large as the conversation) when a call starts and when it ends.
 * Stream i calls `routes[i % routes.length]` (one route per trajectory, as each Cline core has its
 * own). Between two calls a stream pauses a random 0..thinkMs (the agent running its tool; 0: back to
 * back). One stream makes `calls` calls one after another. With more streams each of them is a closed loop
 * making `calls + 2` calls; stream i starts `i · staggerMs / streams` ms
 * late, so the streams' calls are out of phase as real agents' are, and the first and last call of
 * each stream (ramp up, drain) are not counted: every counted call ran while all the other streams
 * were open.
 */
import { Agent, request as request_ } from "node:http";
import { connect, type Socket } from "node:net";

const promptKb = Number(process.argv[2] ?? 64);

/** A Cline-like conversation of about `kb` KiB: a long system prompt, then task, answers and tool results. */
function clineBody(kb: number): Buffer {
  const words = [
    "the",
    "tool",
    "file",
    "path",
    "content",
    "use",
    "<write_to_file>",
    "when",
    "must",
    '"quoted"',
    "user's",
    "directory",
    "command",
    "result",
    "`code`",
    "- item",
    "## RULES",
    '{\n  "a": 1\n}',
  ];
  let seed = 7;
  const text = (chars: number) => {
    let out = "";
    while (out.length < chars) {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      out += words[seed % words.length]! + (seed % 11 === 0 ? "\n" : " ");
    }
    return out;
  };
  const total = kb * 1024;
  const system = text(Math.min(52_000, Math.floor(total * 0.8)));
  const rest = Math.max(0, total - system.length);
  const messages: unknown[] = [
    { role: "system", content: system },
    {
      role: "user",
      content: [
        { type: "text", text: `<task>\n${text(400)}\n</task>` },
        { type: "text", text: `<environment_details>\n${text(1500)}\n</environment_details>` },
      ],
    },
  ];
  for (let turn = 0; turn * 4000 < rest; turn++) {
    messages.push({ role: "assistant", content: `<read_file>\n<path>src/m${turn}.py</path>\n</read_file>` });
    messages.push({
      role: "user",
      content: [
        { type: "text", text: `[read_file for 'src/m${turn}.py'] Result:` },
        { type: "text", text: text(3800) },
      ],
    });
  }
  return Buffer.from(
    JSON.stringify({
      model: "bench-model",
      messages,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    }),
  );
}

const BODY = clineBody(promptKb);
// Cline's HTTP client (undici) keeps connections alive and turns Nagle's algorithm off, as this does
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, noDelay: true });

/** Microseconds on CLOCK_MONOTONIC, the clock every process of the machine shares. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * One call's timings, ms: time to first byte and to the end of the stream, as the client sees them;
 * and, from the upstream's stamps (`~A<µs>~` request arrival, `~T<µs>~` chunk written; see
 * upstream.ts), how long the request took to reach the upstream and each chunk to reach the client.
 */
export interface CallTiming {
  readonly ttfb: number;
  readonly total: number;
  readonly request: number;
  readonly chunks: number[];
}

const STAMP = /~([AT])(\d+)~/g;

/** A Cline core's message stream to the runner (one connection per stream, as one per core). */
class CoreStream {
  private readonly socket: Socket;
  constructor(runner: { host: string; port: number }) {
    this.socket = connect({ ...runner, noDelay: true });
    this.socket.on("error", () => undefined);
  }
  state(): void {
    this.socket.write(STATE_LINE);
  }
  partial(chars: number): void {
    this.socket.write(
      `${JSON.stringify({ ts: Date.now(), type: "say", say: "text", text: "x".repeat(chars), partial: true })}\n`,
    );
  }
}
const STATE_LINE = Buffer.concat([BODY, Buffer.from("\n")]);
const coreStreams = new Map<string, CoreStream>();
function coreStream(runner: { host: string; port: number }, i: number): CoreStream {
  const key = `${runner.host}:${runner.port}#${i}`;
  let s = coreStreams.get(key);
  if (!s) {
    s = new CoreStream(runner);
    coreStreams.set(key, s);
  }
  return s;
}

function call(url: URL, token: string, core?: CoreStream): Promise<CallTiming> {
  core?.state();
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const startUs = nowUs();
    let ttfb = -1;
    let tail = "";
    let request = Number.NaN;
    const chunks: number[] = [];
    const req = request_(
      url,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${token}`,
          "content-length": String(BODY.length),
        },
      },
      (res) => {
        res.setEncoding("latin1");
        res.on("data", (s: string) => {
          const at = nowUs();
          if (ttfb < 0) ttfb = performance.now() - t0;
          tail += s;
          STAMP.lastIndex = 0;
          let used = 0;
          for (let m = STAMP.exec(tail); m; m = STAMP.exec(tail)) {
            const stamp = Number(m[2]);
            if (m[1] === "A") request = (stamp - startUs) / 1000;
            else {
              chunks.push((at - stamp) / 1000);
              core?.partial(chunks.length * 4);
            }
            used = STAMP.lastIndex;
          }
          // keep enough to complete a stamp cut by the read
          tail = tail.slice(Math.max(used, tail.length - 40));
        });
        res.on("end", () => {
          const total = performance.now() - t0;
          core?.state();
          if (res.statusCode !== 200)
            reject(new Error(`bench call to ${url} failed: HTTP ${res.statusCode} ${tail}`));
          else if (!tail.includes("data: [DONE]"))
            reject(new Error(`bench stream from ${url} ended without [DONE]: …${tail}`));
          else if (Number.isNaN(request) || chunks.length === 0)
            reject(new Error(`bench stream from ${url} carried no upstream stamps (was the text altered?)`));
          else resolve({ ttfb, total, request, chunks });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(BODY);
  });
}

interface Phase {
  readonly routes: readonly { readonly url: string; readonly token: string }[];
  readonly streams: number;
  readonly calls: number;
  readonly staggerMs: number;
  /** Each stream pauses a random 0..thinkMs between calls, as an agent runs its tool. */
  readonly thinkMs: number;
  /** Where the cores' streams to the runner go (the gateway process), if anywhere. */
  readonly runner?: { readonly host: string; readonly port: number };
}

/** An agent's own time between two model calls (it runs the tool the answer asked for): 0..ms. */
function think(ms: number): Promise<void> | undefined {
  return ms > 0 ? new Promise((r) => setTimeout(r, Math.random() * ms)) : undefined;
}

async function phase(p: Phase): Promise<CallTiming[]> {
  const routes = p.routes.map((r) => ({ url: new URL(`${r.url}/chat/completions`), token: r.token }));
  const samples: CallTiming[] = [];
  if (p.streams === 1) {
    const core = p.runner ? coreStream(p.runner, 0) : undefined;
    for (let i = 0; i < p.calls; i++) {
      samples.push(await call(routes[0]!.url, routes[0]!.token, core));
      await think(p.thinkMs);
    }
    return samples;
  }
  await Promise.all(
    Array.from({ length: p.streams }, async (_, i) => {
      const route = routes[i % routes.length]!;
      const core = p.runner ? coreStream(p.runner, i) : undefined;
      await new Promise((r) => setTimeout(r, (i * p.staggerMs) / p.streams));
      for (let k = 0; k < p.calls + 2; k++) {
        const s = await call(route.url, route.token, core);
        if (k > 0 && k <= p.calls) samples.push(s);
        await think(p.thinkMs);
      }
    }),
  );
  return samples;
}

let queue = Promise.resolve();
process.on("message", (m: { phase?: Phase }) => {
  if (!m.phase) return;
  const p = m.phase;
  queue = queue.then(async () => {
    try {
      process.send!({ phase: { samples: await phase(p) } });
    } catch (err) {
      process.send!({ error: (err as Error).message });
    }
  });
});
process.on("disconnect", () => process.exit(0));
process.send!({ ready: { bodyBytes: BODY.length } });
