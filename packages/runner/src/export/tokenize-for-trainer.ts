import { FlakegymError } from "../errors.js";
import type { ChatMessage, ChatTool } from "../policy/chat.js";
import { MASKED } from "../run-format/atropos-schema.js";
import type { ChatTokenizer } from "./tokenizer.js";

/** Roles whose turns are trained (Atropos `UNMASKED_ROLES`). */
export const TRAINED_ROLES: readonly string[] = ["assistant", "agent"];

/** `-100`: the mask value of a position that is not trained (defined with Atropos's records). */
export { MASKED };

export interface TrainerTokens {
  readonly tokens: number[];
  /** Same length as tokens: -100 where not trained, the token id where trained. */
  readonly masks: number[];
}

export interface TokenizeForTrainerOptions {
  /** Train every assistant turn (Atropos `train_on_all_assistant_turns`); default: the last one only. */
  readonly trainOnAllAssistantTurns?: boolean;
  readonly tools?: readonly ChatTool[];
  readonly templateKwargs?: Readonly<Record<string, unknown>>;
  /** Atropos drops a trailing EOS token when the completion was cut by the length limit. */
  readonly finishReason?: string;
  /**
   * Refuse a chat whose template rewrites history (a turn rendered alone is not a prefix of the
   * whole chat), where Atropos would silently write mask ids that differ from the tokens.
   * Default true; false reproduces Atropos exactly.
   */
  readonly strict?: boolean;
}

/** The template re-rendered history: spans computed per turn do not line up with the whole chat. */
export class TemplateDriftError extends FlakegymError {
  override readonly name = "TemplateDriftError";
  constructor(
    readonly messageIndex: number,
    readonly position: number,
    message: string,
  ) {
    super("E_TEMPLATE_DRIFT", message, {
      hint: "export from the turn log (exportTrajectory), which splits such trajectories into segments",
    });
  }
}

/** Index of the first position where a and b differ (or the shorter length). */
export function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

/**
 * Atropos `tokenize_for_trainer`: tokens are the chat template of the whole chat; by default only
 * the last message is trained (everything up to the generation prompt before it is masked); with
 * `trainOnAllAssistantTurns` each assistant span `[len(tpl(chat[:i], gen)), len(tpl(chat[:i+1])))`
 * is trained.
 */
export function tokenizeForTrainer(
  tok: ChatTokenizer,
  chat: readonly ChatMessage[],
  opts: TokenizeForTrainerOptions = {},
): TrainerTokens {
  const render = {
    tools: opts.tools,
    ...(opts.templateKwargs ? { templateKwargs: opts.templateKwargs } : {}),
  };
  let tokens = tok.apply(chat, { ...render, addGenerationPrompt: false });
  let masks: number[];
  const strict = opts.strict !== false;
  if (!opts.trainOnAllAssistantTurns) {
    const prefixTokens = tok.apply(chat.slice(0, -1), { ...render, addGenerationPrompt: true });
    const prefixLen = prefixTokens.length;
    if (strict && firstDifference(prefixTokens, tokens) < prefixLen) {
      const at = firstDifference(prefixTokens, tokens);
      throw new TemplateDriftError(
        chat.length - 1,
        at,
        `the prompt before message ${chat.length - 1} renders differently inside the whole chat (first difference at token ${at})`,
      );
    }
    masks = [
      ...new Array<number>(Math.min(prefixLen, tokens.length)).fill(MASKED),
      ...tokens.slice(prefixLen),
    ];
  } else {
    masks = new Array<number>(tokens.length).fill(MASKED);
    for (const [i, msg] of chat.entries()) {
      if (!TRAINED_ROLES.includes(msg.role)) continue;
      const start = tok.apply(chat.slice(0, i), { ...render, addGenerationPrompt: true }).length;
      const span = tok.apply(chat.slice(0, i + 1), { ...render, addGenerationPrompt: false });
      if (strict) {
        const at = firstDifference(span, tokens);
        if (at < span.length) {
          throw new TemplateDriftError(
            i,
            at,
            `message ${i} (assistant) renders differently alone than inside the whole chat (first difference at token ${at} of ${span.length}); the template rewrites history`,
          );
        }
      }
      for (let p = start; p < span.length && p < masks.length; p++) masks[p] = span[p]!;
    }
  }
  if (opts.finishReason === "length" && tokens.length > 0 && tokens[tokens.length - 1] === tok.eosTokenId) {
    tokens = tokens.slice(0, -1);
    masks = masks.slice(0, -1);
  }
  return { tokens, masks };
}
