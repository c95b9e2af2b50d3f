import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";

/**
 * The independent inference server `npm run conformance` samples from: vLLM (its CPU build from
 * PyPI, tests/conformance/requirements-vllm.txt) serving a tiny random-weight Qwen3 made here
 * (tiny_model.py) with the real Qwen3 tokenizer. vLLM's own OpenAI-compatible server returns the
 * sampled token ids and logprobs flakegym's gateway records; no flakegym code is between them.
 */

export const LIVE_MODEL = "tiny-qwen3";
/** vLLM's context: Cline's first prompt (~11 k tokens), the truncated member's long call and what follows. */
export const LIVE_MAX_MODEL_LEN = 20_480;

export interface LiveServer {
  readonly baseUrl: string;
  readonly version: string;
  close(): Promise<void>;
}

/** A free loopback port (vLLM takes no port 0): listen on 0, read it, close. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Builds the tiny model directory with `python` (torch + transformers) into `out`. */
export function buildTinyModel(python: string, tokenizerDir: string, out: string, root: string): void {
  execFileSync(python, [join(root, "tests/conformance/tiny_model.py"), tokenizerDir, out], {
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 900_000,
  });
}

/** Polls `/v1/models` until it answers 200, the process exits, or `ms` runs out. */
async function waitReady(url: string, child: ChildProcess, ms: number, log: () => string): Promise<void> {
  using deadline = createDeadline({
    timeout: { ms, limit: "the vLLM start bound (FLAKEGYM_CONFORMANCE_VLLM_START_MS)" },
  });
  while (!deadline.signal.aborted) {
    if (child.exitCode !== null)
      throw new Error(`vLLM exited with ${child.exitCode} before serving: ${log().slice(-2000)}`);
    using probe = createDeadline({
      signals: [deadline.signal],
      timeout: { ms: 5_000, limit: "one vLLM readiness probe" },
    });
    try {
      const r = await fetch(`${url}/models`, { signal: probe.signal });
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
  throw new Error(
    `${String(deadline.signal.reason)}: vLLM did not serve; its log ends: ${log().slice(-2000)}`,
  );
}

/** Starts vLLM's OpenAI server on a free loopback port for `modelDir`; resolves once it serves. */
export async function startLiveServer(python: string, modelDir: string): Promise<LiveServer> {
  const version = execFileSync(python, ["-c", "import vllm; print(vllm.__version__)"], {
    encoding: "utf8",
    timeout: 600_000,
  }).trim();
  const port = await freePort();
  const args = ["-m", "vllm.entrypoints.openai.api_server", "--model", modelDir];
  args.push("--served-model-name", LIVE_MODEL, "--host", "127.0.0.1", "--port", String(port));
  args.push("--dtype", "float32", "--max-model-len", String(LIVE_MAX_MODEL_LEN), "--enforce-eager");
  args.push("--max-num-seqs", "4", "--seed", "0");
  // a whole prompt in one step: vLLM's CPU build fails a seeded request whose prefill is chunked
  // (`CPU Generator does not use offset`, the engine dies); Cline's first prompt is ~11 k tokens
  args.push("--max-num-batched-tokens", String(LIVE_MAX_MODEL_LEN));
  const child = spawn(python, args, {
    env: { ...process.env, VLLM_CPU_KVCACHE_SPACE: "1", VLLM_TARGET_DEVICE: "cpu", HF_HUB_OFFLINE: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const close = async () => {
    if (child.exitCode !== null) return;
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await gone;
    clearTimeout(t);
  };
  try {
    await waitReady(
      baseUrl,
      child,
      Number(process.env["FLAKEGYM_CONFORMANCE_VLLM_START_MS"] ?? 900_000),
      () => out,
    );
  } catch (err) {
    await close();
    throw err;
  }
  return { baseUrl, version, close };
}
