/**
 * The gateway's own thread (started by gateway/thread.ts): runs createPolicyGateway with nothing
 * else on its event loop, and answers the runner's control messages (thread-protocol.ts).
 */
import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import { match } from "ts-pattern";
import { AnthropicUpstream } from "../policy/anthropic-upstream.js";
import type { UpstreamEvent } from "../policy/chat.js";
import { OpenAiUpstream } from "../policy/openai-upstream.js";
import {
  type PolicyUpstream,
  type PortableUpstream,
  type UpstreamCall,
  UpstreamError,
} from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import { createPolicyGateway } from "./server.js";
import type { FromGateway, SyncAnswer, ThreadInit, ThreadUpstream, ToGateway } from "./thread-protocol.js";
import type { TrajectoryRoute } from "./types.js";

const init = workerData as ThreadInit & { readonly syncPort: MessagePort };
const port = parentPort!;
const syncFlag = new Int32Array(init.syncFlag);
const post = (m: FromGateway) => port.postMessage(m);
for (const s of init.secrets) runSecrets.add(s);

/** Portable upstreams, one per id as in the runner (an upstream's state, e.g. refused token facts, is shared). */
const portables = new Map<string, PolicyUpstream>();
function upstreamOf(u: ThreadUpstream): PolicyUpstream {
  if ("proxy" in u) return new ProxyUpstream(u.proxy.id, u.proxy.kind, u.proxy.secrets);
  const made = match(u.portable as PortableUpstream)
    .with({ kind: "openai" }, (p) => new OpenAiUpstream(p.options))
    .with({ kind: "anthropic" }, (p) => new AnthropicUpstream(p.options))
    .exhaustive();
  const known = portables.get(made.id);
  if (known) return known;
  portables.set(made.id, made);
  return made;
}

/** A call whose upstream lives in the runner's thread: its events, as they come back. */
class CallQueue {
  private readonly items: ({ ev: UpstreamEvent } | { end: true } | { error: unknown })[] = [];
  private wake: (() => void) | undefined;
  push(item: { ev: UpstreamEvent } | { end: true } | { error: unknown }): void {
    this.items.push(item);
    this.wake?.();
  }
  /** The next item; an abort of `signal` ends the wait (the runner may never answer). */
  async next(signal: AbortSignal): Promise<{ ev: UpstreamEvent } | { end: true } | { error: unknown }> {
    while (this.items.length === 0) {
      if (signal.aborted) return { error: signal.reason };
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
    return this.items.shift()!;
  }
}

const proxied = new Map<number, CallQueue>();
let nextCallId = 0;

class ProxyUpstream implements PolicyUpstream {
  constructor(
    readonly id: string,
    readonly kind: PolicyUpstream["kind"],
    readonly secrets: readonly string[],
  ) {}
  async *complete(call: UpstreamCall, signal: AbortSignal): AsyncGenerator<UpstreamEvent> {
    const callId = ++nextCallId;
    const queue = new CallQueue();
    proxied.set(callId, queue);
    let finished = false;
    try {
      post({ op: "call", callId, call });
      for (;;) {
        const item = await queue.next(signal);
        if ("end" in item) break;
        if ("error" in item) throw item.error;
        yield item.ev;
      }
      finished = true;
    } finally {
      proxied.delete(callId);
      if (!finished) post({ op: "abort", callId });
    }
  }
}

const gateway = await createPolicyGateway({
  listen: [...init.listen],
  ...(init.maxBodyBytes !== undefined ? { maxBodyBytes: init.maxBodyBytes } : {}),
  ...(init.maxCallsPerTrajectory !== undefined ? { maxCallsPerTrajectory: init.maxCallsPerTrajectory } : {}),
  ...(init.measureRunTime ? { measureRunTime: true } : {}),
});
const routes = new Map<string, TrajectoryRoute>();

const answerSync = (reply: number, trajectoryId: string) => {
  const answer: SyncAnswer = { reply, status: routes.get(trajectoryId)?.status() };
  init.syncPort.postMessage(answer);
  Atomics.store(syncFlag, 0, reply);
  Atomics.notify(syncFlag, 0);
};

const onMessage = async (m: ToGateway): Promise<void> =>
  match(m)
    .with({ op: "register" }, (r) => {
      for (const s of r.secrets) runSecrets.add(s);
      const route = gateway.register(r.trajectoryId, {
        upstream: upstreamOf(r.upstream),
        token: r.token,
        ...(r.limits ? { limits: r.limits } : {}),
        ...(r.turnLogPath ? { turnLogPath: r.turnLogPath } : {}),
        ...(r.sampling ? { sampling: r.sampling } : {}),
      });
      routes.set(r.trajectoryId, route);
      route.signal.addEventListener(
        "abort",
        () => post({ op: "terminal", trajectoryId: r.trajectoryId, terminal: route.signal.reason }),
        { once: true },
      );
    })
    .with({ op: "unregister" }, async (u) => {
      const status = await gateway.unregister(u.trajectoryId);
      routes.delete(u.trajectoryId);
      post({ op: "reply", reply: u.reply, status });
    })
    .with({ op: "status" }, (s) => answerSync(s.reply, s.trajectoryId))
    .with({ op: "close" }, async (c) => {
      await gateway.close();
      post({ op: "reply", reply: c.reply, status: undefined });
    })
    .with({ op: "event" }, (e) => proxied.get(e.callId)?.push({ ev: e.event }))
    .with({ op: "end" }, (e) => proxied.get(e.callId)?.push({ end: true }))
    .with({ op: "fail" }, (f) =>
      proxied.get(f.callId)?.push({
        error: f.error.upstream
          ? new UpstreamError(f.error.message, f.error.upstream.status, {
              terminal: f.error.upstream.terminal,
            })
          : new Error(f.error.message),
      }),
    )
    .exhaustive();

port.on("message", (m: ToGateway) => {
  // a control message that fails is a fault of this thread: it ends, and the runner names it
  onMessage(m).catch((err: unknown) => {
    setImmediate(() => {
      throw err;
    });
  });
});
post({ op: "ready", origin: gateway.origin, socketPath: gateway.socketPath });
