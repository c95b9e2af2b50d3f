import type { ChatContentPart, ChatMessage, ChatRequest, ChatTool, ChatToolCall } from "./chat.js";
import { ChatRequest as ChatRequestSchema, contentText } from "./chat.js";

/**
 * Conversions between Anthropic Messages requests and the canonical (OpenAI chat) form: text,
 * images, tool use, tool results, thinking and the system prompt. Cache-control markers and other
 * Anthropic-only hints are dropped on the way to the canonical form (it is what chat templates
 * render); same-protocol calls are passed through unconverted by the upstreams.
 */

type Json = Record<string, unknown>;
const rec = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;
const blocksOf = (content: unknown): Json[] =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : Array.isArray(content)
      ? content.map(rec).filter((b): b is Json => b !== undefined)
      : [];

function toolResultText(content: unknown): string {
  if (typeof content === "string") return content;
  return blocksOf(content)
    .map((b) => (b["type"] === "text" && typeof b["text"] === "string" ? b["text"] : ""))
    .filter((t) => t.length > 0)
    .join("\n");
}

/** An Anthropic `/v1/messages` body → the canonical chat request. */
export function anthropicToChatRequest(body: Json): ChatRequest {
  const messages: ChatMessage[] = [];
  const system = body["system"];
  const systemText =
    typeof system === "string"
      ? system
      : blocksOf(system)
          .map((b) => String(b["text"] ?? ""))
          .join("\n");
  if (systemText.length > 0) messages.push({ role: "system", content: systemText });
  const input = Array.isArray(body["messages"]) ? body["messages"] : [];
  for (const m of input) {
    const msg = rec(m);
    if (!msg) continue;
    const blocks = blocksOf(msg["content"]);
    if (msg["role"] === "assistant") {
      let text = "";
      let reasoning = "";
      const calls: ChatToolCall[] = [];
      for (const b of blocks) {
        if (b["type"] === "text") text += String(b["text"] ?? "");
        else if (b["type"] === "thinking") reasoning += String(b["thinking"] ?? "");
        else if (b["type"] === "tool_use") {
          calls.push({
            id: String(b["id"] ?? `call_${calls.length}`),
            type: "function",
            function: { name: String(b["name"] ?? ""), arguments: JSON.stringify(b["input"] ?? {}) },
          });
        }
      }
      const out: ChatMessage = { role: "assistant", content: text };
      if (calls.length > 0) out.tool_calls = calls;
      if (reasoning) out.reasoning_content = reasoning;
      messages.push(out);
      continue;
    }
    // user: tool results become tool messages (before the user's own text), the rest content parts
    const parts: ChatContentPart[] = [];
    for (const b of blocks) {
      if (b["type"] === "tool_result") {
        messages.push({
          role: "tool",
          tool_call_id: String(b["tool_use_id"] ?? ""),
          content: toolResultText(b["content"]),
        });
      } else if (b["type"] === "text") {
        parts.push({ type: "text", text: String(b["text"] ?? "") });
      } else if (b["type"] === "image") {
        const src = rec(b["source"]);
        const url =
          src?.["type"] === "base64"
            ? `data:${src["media_type"]};base64,${src["data"]}`
            : String(src?.["url"] ?? "");
        parts.push({ type: "image_url", image_url: { url } });
      }
    }
    if (parts.length > 0) messages.push({ role: "user", content: parts });
  }
  const req: Json = {
    model: String(body["model"] ?? ""),
    messages,
    stream: body["stream"] === true,
  };
  const tools = Array.isArray(body["tools"]) ? body["tools"].map(rec).filter((t) => t !== undefined) : [];
  if (tools.length > 0) {
    req["tools"] = tools.map(
      (t): ChatTool => ({
        type: "function",
        function: {
          name: String(t["name"] ?? ""),
          ...(typeof t["description"] === "string" ? { description: t["description"] } : {}),
          parameters: (rec(t["input_schema"]) ?? {}) as Record<string, unknown>,
        },
      }),
    );
    const choice = rec(body["tool_choice"]);
    if (choice?.["type"] === "any") req["tool_choice"] = "required";
    else if (choice?.["type"] === "tool")
      req["tool_choice"] = { type: "function", function: { name: choice["name"] } };
    else if (choice?.["type"] === "none") req["tool_choice"] = "none";
    else req["tool_choice"] = "auto";
  }
  if (typeof body["max_tokens"] === "number") req["max_tokens"] = body["max_tokens"];
  if (typeof body["temperature"] === "number") req["temperature"] = body["temperature"];
  return ChatRequestSchema.parse(req);
}

/** The canonical chat request → an Anthropic `/v1/messages` body (roles merged to alternate). */
export function chatRequestToAnthropic(req: ChatRequest, model: string): Json {
  const system: string[] = [];
  const out: { role: "user" | "assistant"; content: Json[] }[] = [];
  const push = (role: "user" | "assistant", blocks: Json[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of req.messages) {
    if (m.role === "system" || m.role === "developer") {
      system.push(contentText(m.content));
    } else if (m.role === "tool") {
      push("user", [
        { type: "tool_result", tool_use_id: m.tool_call_id ?? "", content: contentText(m.content) },
      ]);
    } else if (m.role === "assistant") {
      const blocks: Json[] = [];
      const text = contentText(m.content);
      if (text) blocks.push({ type: "text", text });
      for (const c of m.tool_calls ?? []) {
        let input: unknown = {};
        try {
          input = JSON.parse(c.function.arguments || "{}");
        } catch {
          input = { _raw: c.function.arguments };
        }
        blocks.push({ type: "tool_use", id: c.id, name: c.function.name, input });
      }
      push("assistant", blocks);
    } else {
      const blocks: Json[] = [];
      if (typeof m.content === "string") blocks.push({ type: "text", text: m.content });
      else
        for (const p of m.content ?? []) {
          if (p.type === "text") blocks.push({ type: "text", text: p.text ?? "" });
          else if (p.type === "image_url") {
            const url = String(rec(p["image_url"])?.["url"] ?? "");
            const m64 = /^data:([^;]+);base64,(.*)$/s.exec(url);
            blocks.push(
              m64
                ? { type: "image", source: { type: "base64", media_type: m64[1], data: m64[2] } }
                : { type: "image", source: { type: "url", url } },
            );
          }
        }
      push("user", blocks);
    }
  }
  const body: Json = {
    model,
    max_tokens: req.max_completion_tokens ?? req.max_tokens ?? 8192,
    messages: out,
    stream: true,
  };
  if (system.length > 0) body["system"] = system.join("\n\n");
  if (typeof req.temperature === "number") body["temperature"] = req.temperature;
  if (req.tools && req.tools.length > 0) {
    body["tools"] = req.tools.map((t) => ({
      name: t.function.name,
      description: t.function.description ?? "",
      input_schema: t.function.parameters ?? { type: "object", properties: {} },
    }));
    const tc = req.tool_choice;
    if (tc === "required") body["tool_choice"] = { type: "any" };
    else if (tc === "none") body["tool_choice"] = { type: "none" };
    else if (rec(tc) && rec(rec(tc)?.["function"])?.["name"])
      body["tool_choice"] = { type: "tool", name: rec(rec(tc)?.["function"])?.["name"] };
  }
  return body;
}
