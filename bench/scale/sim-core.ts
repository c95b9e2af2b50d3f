import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { resolveClinePackage } from "@flakegym/cline-vendor";
import { loadFileDescriptorSetFromBuffer, type MethodDefinition } from "@grpc/proto-loader";
import { resendOnFreshSocket } from "../../packages/runner/src/policy/http-post.js";
import { frameMessage, splitFrames } from "./grpc-frames.js";
import type { AgentHold } from "./hold.js";
import { chatRequestBody, type StateMessage, sseDelta, stateJson } from "./sim-script.js";

/**
 * A SIMULATED worker: what a Nomad allocation of the scale bench runs in place of the supervisor
 * and the Cline core. It answers the core's gRPC surface the runner's driver uses (the real
 * descriptor set, real HTTP/2 and gRPC framing, the supervisor's core-token gate and its
 * `/flakegym.Supervisor/Diff`), and its "agent" is a scripted loop of model calls through the real
 * policy gateway: Cline-sized requests, streamed answers posted as partial messages, state posted
 * after every message. No tool runs, no file changes; the diff it hands back is a fixed patch.
 */

export interface SimCoreOptions {
  /** Model calls per trajectory; the last one's answer is the completion. */
  readonly turns: number;
  /** Simulated tool time between turns, ms. */
  readonly toolMs: number;
  /**
   * The hold (hold.ts): how many agents it waits for (the point's N), its bound, and the spread of
   * the released agents' phases (one turn's period).
   */
  readonly hold: { readonly expected: number; readonly timeoutMs: number; readonly spreadMs: number };
}

/** What all simulated cores of the cluster process counted. */
export interface SimStats {
  modelCalls: number;
  modelFailures: number;
  /** Why model calls failed (the message, numbers masked) × count: the harness's side of a failure. */
  failureReasons: Record<string, number>;
  grpcCalls: number;
  diffs: number;
}

type Method = MethodDefinition<object, object>;
let methodsByPath: Map<string, Method> | undefined;

function methods(): Map<string, Method> {
  if (methodsByPath) return methodsByPath;
  const def = loadFileDescriptorSetFromBuffer(readFileSync(resolveClinePackage().descriptorSet), {
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  methodsByPath = new Map();
  for (const entry of Object.values(def)) {
    if (!entry || typeof entry !== "object" || "format" in entry) continue;
    for (const m of Object.values(entry as Record<string, Method>))
      if (m && typeof m === "object" && "path" in m) methodsByPath.set(m.path, m);
  }
  return methodsByPath;
}

const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PATCH =
  "diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+simulated\n";

function trailersOnly(stream: ServerHttp2Stream, status: number, message: string): undefined {
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc",
      "grpc-status": String(status),
      "grpc-message": message,
    },
    { endStream: true },
  );
}

function readAll(stream: ServerHttp2Stream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

/** One simulated core: its state, its subscribers, its agent loop. */
export class SimCore {
  private messages: StateMessage[] = [];
  private taskId: string | undefined;
  private approvalVersion = 0;
  private baseUrl = "";
  private apiKey = "";
  private model = "sim";
  private loop: AbortController | undefined;
  private readonly stateSubs = new Set<ServerHttp2Stream>();
  private readonly partialSubs = new Set<ServerHttp2Stream>();
  private lastTs = 0;
  private retry: (() => void) | undefined;
  /** Where this core's agent stands with the hold: counted once, as arrived or as gone before. */
  private held: "before" | "arrived" | "gone" = "before";

  constructor(
    private readonly token: string,
    private readonly o: SimCoreOptions,
    private readonly stats: SimStats,
    private readonly hold: AgentHold,
  ) {}

  onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): undefined {
    stream.on("error", () => {});
    if (headers.authorization !== `Bearer ${this.token}`)
      return trailersOnly(stream, 16, "core token refused");
    const path = String(headers[":path"]);
    if (path === "/flakegym.Supervisor/Diff") return this.diff(stream, Number(headers["flakegym-seq"]));
    const m = methods().get(path);
    if (!m) return trailersOnly(stream, 12, `${path} is not simulated`);
    this.stats.grpcCalls++;
    void readAll(stream)
      .then((body) => {
        const first = splitFrames(body).messages[0] ?? Buffer.alloc(0);
        this.call(
          path.slice(path.lastIndexOf("/") + 1),
          m.requestDeserialize(first) as Record<string, unknown>,
          stream,
          m,
        );
      })
      .catch(() => stream.close());
  }

  kill(): void {
    this.leaveHold();
    this.loop?.abort();
    for (const s of [...this.stateSubs, ...this.partialSubs]) s.close();
  }

  private call(name: string, req: Record<string, unknown>, stream: ServerHttp2Stream, m: Method): undefined {
    const reply = (v: object): undefined => {
      this.unary(stream, m, v);
    };
    switch (name) {
      case "getLatestState":
        return reply({ state_json: this.state() });
      case "subscribeToState":
        this.subscribe(stream, this.stateSubs, m, { state_json: this.state() });
        return;
      case "subscribeToPartialMessage":
        this.subscribe(stream, this.partialSubs, m, undefined);
        return;
      case "updateApiConfigurationProto":
        this.configure(req);
        return reply({});
      case "updateAutoApprovalSettings":
        this.approvalVersion = Number(req.version ?? this.approvalVersion);
        return reply({});
      case "newTask":
        return reply({ value: this.start(String(req.text ?? "")) });
      case "cancelTask":
      case "clearTask":
        if (this.loop) this.leaveHold();
        this.loop?.abort();
        if (name === "clearTask") [this.messages, this.taskId] = [[], undefined];
        return reply({});
      case "askResponse":
        this.retry?.();
        return reply({});
      case "getProcessInfo":
        return reply({ process_id: process.pid, version: "sim" });
      default:
        return reply({});
    }
  }

  private configure(req: Record<string, unknown>): void {
    const c = (req.api_configuration ?? req.apiConfiguration ?? {}) as Record<string, unknown>;
    this.baseUrl = String(c.open_ai_base_url ?? c.openAiBaseUrl ?? "");
    this.apiKey = String(c.open_ai_api_key ?? c.openAiApiKey ?? "");
    this.model = String(c.act_mode_open_ai_model_id ?? c.actModeOpenAiModelId ?? "sim");
  }

  private unary(stream: ServerHttp2Stream, m: Method, value: object): void {
    if (stream.closed) return;
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(frameMessage(m.responseSerialize(value)));
  }

  private subscribe(
    stream: ServerHttp2Stream,
    set: Set<ServerHttp2Stream>,
    m: Method,
    first?: object,
  ): undefined {
    stream.respond({ ":status": 200, "content-type": "application/grpc" });
    set.add(stream);
    (stream as ServerHttp2Stream & { method?: Method }).method = m;
    stream.on("close", () => set.delete(stream));
    if (first) stream.write(frameMessage(m.responseSerialize(first)));
  }

  private post(set: Set<ServerHttp2Stream>, value: object): void {
    for (const s of set) {
      const m = (s as ServerHttp2Stream & { method?: Method }).method!;
      if (!s.closed) s.write(frameMessage(m.responseSerialize(value)));
    }
  }

  private state(): string {
    return stateJson({ messages: this.messages, taskId: this.taskId, approvalVersion: this.approvalVersion });
  }

  private say(kind: "say" | "ask", what: string, text: string): StateMessage {
    this.lastTs = Math.max(Date.now(), this.lastTs + 1);
    const msg: StateMessage =
      kind === "say"
        ? { ts: this.lastTs, type: "say", say: what, text }
        : { ts: this.lastTs, type: "ask", ask: what, text };
    this.messages.push(msg);
    this.post(this.stateSubs, { state_json: this.state() });
    return msg;
  }

  private start(task: string): string {
    this.taskId = `sim-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    this.loop?.abort();
    const loop = new AbortController();
    this.loop = loop;
    this.say("say", "task", task);
    void this.agent(task, loop.signal)
      .catch(() => {})
      .finally(() => this.leaveHold());
    return this.taskId;
  }

  /** The scripted agent: `turns` model calls, tool time between them, the last answer the completion. */
  private async agent(task: string, signal: AbortSignal): Promise<void> {
    const answers: string[] = [];
    for (let turn = 1; turn <= this.o.turns && !signal.aborted; turn++) {
      const started = this.say("say", "api_req_started", JSON.stringify({ request: `turn ${turn}` }));
      const answer = await this.modelCallWithRetry(task, answers, signal);
      if (answer === undefined) return;
      started.text = JSON.stringify({
        request: `turn ${turn}`,
        tokensIn: answer.in,
        tokensOut: answer.out,
        cost: 0,
      });
      if (turn === this.o.turns) {
        this.say("say", "completion_result", answer.text);
        this.say("ask", "completion_result", "");
        return;
      }
      this.say("say", "text", answer.text);
      answers.push(answer.text);
      if (this.held === "before") {
        this.held = "arrived";
        await this.hold.arrive(signal);
      }
      await sleep(this.o.toolMs);
    }
  }

  /** This core's agent will not arrive at the hold (stopped, cancelled): it no longer waits for it. */
  private leaveHold(): void {
    if (this.held !== "before") return;
    this.held = "gone";
    this.hold.leave();
  }

  /** A failed call is asked about (`api_req_failed`) like Cline does; the runner's answer retries it. */
  private async modelCallWithRetry(task: string, answers: readonly string[], signal: AbortSignal) {
    for (;;) {
      try {
        return await this.modelCall(task, answers, signal);
      } catch (err) {
        if (signal.aborted) return undefined;
        this.stats.modelFailures++;
        const why = (err as Error).message.replace(/\d+/g, "#").slice(0, 200);
        this.stats.failureReasons[why] = (this.stats.failureReasons[why] ?? 0) + 1;
        const asked = new Promise<void>((r) => {
          this.retry = r;
        });
        this.say("ask", "api_req_failed", (err as Error).message);
        await asked;
      }
    }
  }

  private modelCall(task: string, answers: readonly string[], signal: AbortSignal) {
    this.stats.modelCalls++;
    return this.postChat(chatRequestBody(this.model, task, answers), signal, false);
  }

  /**
   * One POST to the gateway. Like Cline's OpenAI client (which retries a connection error), a
   * request that met a reused keep-alive socket the gateway had just closed (its idle timeout,
   * crossed while the agent was held) is sent once more on a fresh connection.
   */
  private postChat(body: string, signal: AbortSignal, fresh: boolean) {
    return new Promise<{ text: string; in: number; out: number }>((resolve, reject) => {
      let answered = false;
      const req = request(
        `${this.baseUrl}/chat/completions`,
        {
          method: "POST",
          agent: fresh ? false : agent,
          signal,
          headers: { authorization: `Bearer ${this.apiKey}`, "content-type": "application/json" },
        },
        (res) => {
          answered = true;
          if (res.statusCode !== 200) {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => {
              if (text.length < 300) text += c;
            });
            res.on("end", () =>
              reject(new Error(`the gateway answered ${res.statusCode}: ${text.slice(0, 160)}`)),
            );
            res.on("error", reject);
            return;
          }
          this.readStream(res, resolve, reject);
        },
      );
      req.on("error", (err) => {
        if (!fresh && !signal.aborted && resendOnFreshSocket(req.reusedSocket, answered, err))
          resolve(this.postChat(body, signal, true));
        else reject(err);
      });
      req.end(body);
    });
  }

  private readStream(
    res: NodeJS.ReadableStream,
    resolve: (v: { text: string; in: number; out: number }) => void,
    reject: (e: Error) => void,
  ): void {
    let buf = "";
    let text = "";
    const usage = { in: 0, out: 0 };
    const ts = Math.max(Date.now(), this.lastTs + 1);
    this.lastTs = ts;
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      buf += chunk;
      let nl = buf.indexOf("\n\n");
      while (nl >= 0) {
        const d = sseDelta(buf.slice(0, nl));
        buf = buf.slice(nl + 2);
        if (d.text) {
          text += d.text;
          this.post(this.partialSubs, { ts, type: "SAY", say: "TEXT", text, partial: true });
        }
        if (d.usage) Object.assign(usage, d.usage);
        nl = buf.indexOf("\n\n");
      }
    });
    res.on("end", () => resolve({ text, ...usage }));
    res.on("error", reject);
  }

  private diff(stream: ServerHttp2Stream, seq: number): undefined {
    this.stats.diffs++;
    const patch = Buffer.from(PATCH);
    const head = {
      seq,
      baseCommit: "0".repeat(40),
      bytes: patch.length,
      sha256: createHash("sha256").update(patch).digest("hex"),
    };
    stream.respond({ ":status": 200, "content-type": "application/octet-stream" });
    stream.end(Buffer.concat([Buffer.from(`${JSON.stringify(head)}\n`), patch]));
  }
}
