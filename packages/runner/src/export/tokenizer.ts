import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import type { ChatMessage, ChatTool } from "../policy/chat.js";
import { contentText } from "../policy/chat.js";

/**
 * A HuggingFace tokenizer directory read offline: `tokenizer.json` (the tokenizer) and
 * `tokenizer_config.json` (special tokens and the chat template; a `chat_template.jinja` file next
 * to it is used when the config has none). Templates render with `@huggingface/jinja`, text
 * encodes with `@huggingface/tokenizers`, as `apply_chat_template` does: the rendered text is
 * encoded without adding special tokens (the template writes them).
 */

const SpecialToken = z.union([z.string(), z.object({ content: z.string() }).passthrough(), z.null()]);

export const TokenizerConfig = z
  .object({
    chat_template: z
      .union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }).passthrough())])
      .optional()
      .describe("Jinja chat template (or named templates; 'default' is used)"),
    bos_token: SpecialToken.optional(),
    eos_token: SpecialToken.optional(),
    pad_token: SpecialToken.optional(),
    unk_token: SpecialToken.optional(),
  })
  .passthrough();
export type TokenizerConfig = z.infer<typeof TokenizerConfig>;

export class TokenizerLoadError extends FlakegymError {
  override readonly name = "TokenizerLoadError";
  constructor(message: string, hint?: string) {
    super("E_TOKENIZER", message, hint === undefined ? {} : { hint });
  }
}

/** Chat messages the way templates (and vLLM) see them. */
export interface TemplateMessage {
  readonly role: string;
  readonly content: string;
  readonly [key: string]: unknown;
}

export interface RenderOptions {
  readonly addGenerationPrompt: boolean;
  readonly tools?: readonly ChatTool[] | undefined;
  /** Extra template variables (chat_template_kwargs), e.g. `{ enable_thinking: false }`. */
  readonly templateKwargs?: Readonly<Record<string, unknown>>;
}

export interface ChatTokenizer {
  readonly dir: string;
  readonly eosToken: string | undefined;
  readonly eosTokenId: number | undefined;
  /** Encodes text without adding special tokens (special-token text in it is recognised). */
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** Renders canonical chat messages with the chat template. */
  render(messages: readonly ChatMessage[], opts: RenderOptions): string;
  /** render + encode: `apply_chat_template(messages, tokenize=True)`. */
  apply(messages: readonly ChatMessage[], opts: RenderOptions): number[];
}

const tokenText = (t: z.infer<typeof SpecialToken> | undefined): string | undefined =>
  t === undefined || t === null ? undefined : typeof t === "string" ? t : t.content;

/**
 * Canonical messages → template messages, the way vLLM prepares them: content parts are joined
 * with newlines, missing content becomes "", tool-call arguments are parsed from JSON text into
 * objects (templates print them with `tojson`).
 */
export function toTemplateMessages(messages: readonly ChatMessage[]): TemplateMessage[] {
  return messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role, content: contentText(m.content) };
    if (m.tool_calls && m.tool_calls.length > 0) {
      out["tool_calls"] = m.tool_calls.map((c) => {
        let args: unknown = c.function.arguments;
        try {
          args = JSON.parse(c.function.arguments);
        } catch {
          // keep the model's text as it was
        }
        return { id: c.id, type: "function", function: { name: c.function.name, arguments: args } };
      });
    }
    if (m.tool_call_id !== undefined) out["tool_call_id"] = m.tool_call_id;
    if (m.name !== undefined) out["name"] = m.name;
    if (m.reasoning_content !== undefined) out["reasoning_content"] = m.reasoning_content;
    return out as TemplateMessage;
  });
}

async function readJson(path: string, what: string, signal?: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, { encoding: "utf8", ...(signal ? { signal } : {}) });
  } catch (err) {
    throw new TokenizerLoadError(
      `cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      "a tokenizer directory holds tokenizer.json and tokenizer_config.json (as downloaded from the model's repo)",
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new TokenizerLoadError(`${what} ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Loads a tokenizer directory; errors name the missing or invalid file. */
export async function loadChatTokenizer(
  dir: string,
  opts: { signal?: AbortSignal } = {},
): Promise<ChatTokenizer> {
  const configPath = join(dir, "tokenizer_config.json");
  const tokenizerPath = join(dir, "tokenizer.json");
  const rawConfig = await readJson(configPath, "tokenizer config", opts.signal);
  const parsed = TokenizerConfig.safeParse(rawConfig);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new TokenizerLoadError(`${configPath}: ${i.path.join(".") || "(root)"}: ${i.message}`);
  }
  const config = parsed.data;
  let template: string | undefined =
    typeof config.chat_template === "string"
      ? config.chat_template
      : (config.chat_template?.find((t) => t.name === "default")?.template ??
        config.chat_template?.[0]?.template);
  if (template === undefined) {
    template = await readFile(join(dir, "chat_template.jinja"), "utf8").catch(() => undefined);
  }
  if (template === undefined) {
    throw new TokenizerLoadError(
      `${configPath} has no chat_template (and there is no chat_template.jinja beside it)`,
      "use the tokenizer of the chat/instruct model the policy serves; base-model tokenizers have no template",
    );
  }
  const tokenizerJson = await readJson(tokenizerPath, "tokenizer", opts.signal);
  let tokenizer: Tokenizer;
  let compiled: Template;
  try {
    tokenizer = new Tokenizer(tokenizerJson as object, rawConfig as object);
  } catch (err) {
    throw new TokenizerLoadError(`${tokenizerPath} could not be loaded: ${(err as Error).message}`);
  }
  try {
    compiled = new Template(template);
  } catch (err) {
    throw new TokenizerLoadError(
      `the chat template in ${configPath} does not parse: ${(err as Error).message}`,
    );
  }
  const specials = {
    bos_token: tokenText(config.bos_token) ?? "",
    eos_token: tokenText(config.eos_token) ?? "",
    pad_token: tokenText(config.pad_token) ?? "",
    unk_token: tokenText(config.unk_token) ?? "",
  };
  const eosToken = tokenText(config.eos_token);
  const eosTokenId = eosToken === undefined ? undefined : tokenizer.token_to_id(eosToken);
  const render = (messages: readonly ChatMessage[], o: RenderOptions): string => {
    const ctx: Record<string, unknown> = {
      ...specials,
      ...o.templateKwargs,
      messages: toTemplateMessages(messages),
      add_generation_prompt: o.addGenerationPrompt,
    };
    if (o.tools && o.tools.length > 0) ctx["tools"] = o.tools;
    try {
      return compiled.render(ctx);
    } catch (err) {
      throw new FlakegymError(
        "E_TEMPLATE",
        `chat template of ${dir} failed to render: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  };
  const encode = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).ids;
  return {
    dir,
    eosToken,
    eosTokenId,
    encode,
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false }),
    render,
    apply: (messages, o) => encode(render(messages, o)),
  };
}
