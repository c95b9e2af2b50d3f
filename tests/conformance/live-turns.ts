import { rm } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { createPolicyGateway } from "../../packages/runner/src/gateway/server.js";
import { readTurnLog, type TurnRecord } from "../../packages/runner/src/gateway/turn-log.js";
import type { ChatMessage } from "../../packages/runner/src/policy/chat.js";
import { OpenAiUpstream } from "../../packages/runner/src/policy/openai-upstream.js";
import { parseSse } from "../../packages/runner/src/policy/sse.js";
import { RESULTS, SYSTEM, TASK } from "../../packages/runner/test/export/fixtures.js";
import { LIVE_MAX_MODEL_LEN, LIVE_MODEL } from "./live-server.js";

/**
 * The judged members' turn logs, sampled live: each member's conversation goes through flakegym's
 * real policy gateway (the turn log it writes is the data) to the independent vLLM server, which
 * samples every token id and logprob. The conversations are scripted (a random-weight model cannot
 * drive Cline to a reward), and so are the rewards (run.ts): what is live is every sampled token,
 * its logprob, the server's prompt ids and the server's refusal of the turn-1 member.
 *
 * - truncated: calls 1 and 2 extend one sequence, then the first prompt is sent twice more (what
 *   Cline does after truncating its history back to the task): three or more segments;
 * - zero, one: one call each;
 * - infra: no call (its worker is lost before the agent starts);
 * - turn1: one call whose prompt is longer than vLLM's context: vLLM refuses it (400), nothing is sampled.
 */
export type LiveMember = "truncated" | "zero" | "one" | "infra" | "turn1";

const MAX_TOKENS = 24;

interface Sent {
  readonly status: number;
  readonly text: string;
}

/** One streamed call through the gateway route, bounded by `ms`. */
async function call(
  route: { openaiBaseUrl?: string; token: string },
  messages: ChatMessage[],
): Promise<Sent> {
  using deadline = createDeadline({ timeout: { ms: 300_000, limit: "a live conformance model call" } });
  const res = await fetch(`${route.openaiBaseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
    body: JSON.stringify({
      model: LIVE_MODEL,
      messages,
      stream: true,
      max_tokens: MAX_TOKENS,
      temperature: 1,
    }),
    signal: deadline.signal,
  });
  if (!res.ok) return { status: res.status, text: await res.text() };
  let text = "";
  for await (const ev of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
    if (ev.data === "[DONE]") continue;
    const chunk = JSON.parse(ev.data) as { choices?: { delta?: { content?: string } }[] };
    text += chunk.choices?.[0]?.delta?.content ?? "";
  }
  return { status: res.status, text };
}

const user = (text: string): ChatMessage => ({ role: "user", content: [{ type: "text", text }] });

/** The scripted conversation of one member; returns the HTTP statuses the client saw. */
async function converse(member: LiveMember, route: Parameters<typeof call>[0]): Promise<number[]> {
  const first: ChatMessage[] = [{ role: "system", content: SYSTEM }, user(TASK)];
  switch (member) {
    case "infra":
      return [];
    case "turn1": {
      // longer than vLLM's context: refused before anything is sampled
      const long = user(`${TASK}\n${"context ".repeat(LIVE_MAX_MODEL_LEN * 2)}`);
      return [(await call(route, [first[0]!, long])).status];
    }
    case "zero":
    case "one":
      return [(await call(route, first)).status];
    case "truncated": {
      const a = await call(route, first);
      const second = [...first, { role: "assistant", content: a.text } as ChatMessage, user(RESULTS[0]!)];
      const b = await call(route, second);
      const c = await call(route, first);
      const d = await call(route, first);
      return [a.status, b.status, c.status, d.status];
    }
  }
}

/** Samples every member's turn log live through a gateway to `baseUrl`; `dir` holds the logs. */
export async function sampleLiveTurns(
  baseUrl: string,
  dir: string,
): Promise<{ logs: Record<LiveMember, TurnRecord[]>; statuses: Record<LiveMember, number[]> }> {
  const gw = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } });
  const members: LiveMember[] = ["truncated", "zero", "one", "infra", "turn1"];
  const logs = {} as Record<LiveMember, TurnRecord[]>;
  const statuses = {} as Record<LiveMember, number[]>;
  try {
    for (const m of members) {
      const path = join(dir, `live-${m}.jsonl`);
      await rm(path, { force: true }); // a log of an earlier sampling is not this one's
      const route = gw.register(`live-${m}`, {
        upstream: new OpenAiUpstream({ baseUrl, model: LIVE_MODEL }),
        turnLogPath: path,
      });
      statuses[m] = await converse(m, route);
      await gw.unregister(`live-${m}`);
      logs[m] = statuses[m].length === 0 ? [] : await readTurnLog(path);
    }
  } finally {
    await gw.close();
  }
  return { logs, statuses };
}

/** Sampled ids of a log (what the policy produced), for the run's summary line. */
export const sampledIds = (log: readonly TurnRecord[]): number =>
  log.reduce((n, t) => n + (t.response?.tokens?.ids?.length ?? 0), 0);
