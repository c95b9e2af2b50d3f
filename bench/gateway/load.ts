/**
 * Child process of `npm run bench -- gateway`: the load generator, standing in for the Cline cores
 * (other processes in production). It sends Cline-sized streamed chat requests over keep-alive
 * HTTP/1.1 and times each call: time to the first byte and to the end of the stream (`[DONE]`).
 *
 * Protocol (IPC), answered in order:
 *   `{ phase: { routes: [{ url, token }], streams, calls, staggerMs } }` → `{ phase: { samples: [ttfbMs, totalMs][] } }`
 * Stream i calls `routes[i % routes.length]` (one route per trajectory, as each Cline core has its
 * own). One stream makes `calls` calls one after another. With more streams each of them is a closed loop
 * (no pause between calls) making `calls + 2` calls; stream i starts `i · staggerMs / streams` ms
 * late, so the streams' calls are out of phase as real agents' are, and the first and last call of
 * each stream (ramp up, drain) are not counted: every counted call ran while all the other streams
 * were open.
 */
import { Agent, request } from "node:http";

const promptKb = Number(process.argv[2] ?? 64);

/** A Cline-like conversation of about `kb` KiB: a long system prompt, then task, answers and tool results. */
function clineBody(kb: number): Buffer {
  const words = [
    "the", "tool", "file", "path", "content", "use", "<write_to_file>", "when", "must", "\"quoted\"",
    "user's", "directory", "command", "result", "`code`", "- item", "## RULES", "{\n  \"a\": 1\n}",
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
    { role: "user", content: [{ type: "text", text: `<task>\n${text(400)}\n</task>` }, { type: "text", text: `<environment_details>\n${text(1500)}\n</environment_details>` }] },
  ];
  for (let turn = 0; turn * 4000 < rest; turn++) {
    messages.push({ role: "assistant", content: `<read_file>\n<path>src/m${turn}.py</path>\n</read_file>` });
    messages.push({ role: "user", content: [{ type: "text", text: `[read_file for 'src/m${turn}.py'] Result:` }, { type: "text", text: text(3800) }] });
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
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function call(url: URL, token: string): Promise<[number, number]> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let ttfb = -1;
    let tail = "";
    const req = request(
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
          if (ttfb < 0) ttfb = performance.now() - t0;
          tail = (tail + s).slice(-64);
        });
        res.on("end", () => {
          const total = performance.now() - t0;
          if (res.statusCode !== 200) reject(new Error(`bench call to ${url} failed: HTTP ${res.statusCode} ${tail}`));
          else if (!tail.includes("data: [DONE]")) reject(new Error(`bench stream from ${url} ended without [DONE]: …${tail}`));
          else resolve([ttfb, total]);
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
}

async function phase(p: Phase): Promise<[number, number][]> {
  const routes = p.routes.map((r) => ({ url: new URL(`${r.url}/chat/completions`), token: r.token }));
  const samples: [number, number][] = [];
  if (p.streams === 1) {
    for (let i = 0; i < p.calls; i++) samples.push(await call(routes[0]!.url, routes[0]!.token));
    return samples;
  }
  await Promise.all(
    Array.from({ length: p.streams }, async (_, i) => {
      const route = routes[i % routes.length]!;
      await new Promise((r) => setTimeout(r, (i * p.staggerMs) / p.streams));
      for (let k = 0; k < p.calls + 2; k++) {
        const s = await call(route.url, route.token);
        if (k > 0 && k <= p.calls) samples.push(s);
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
