import type { ConvBlock, ConvMessage } from "../src/view/conversation.js";
import { type Child, h } from "./dom.js";

/** A trajectory's conversation and diffs as DOM (the trajectory and compare pages). */

export function diffView(diff: string, label: string): HTMLElement {
  const pre = h("pre", { class: "diff", "aria-label": label, tabindex: "0" });
  for (const line of diff.split("\n")) {
    const cls =
      line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")
        ? "d-file"
        : line.startsWith("@@")
          ? "d-hunk"
          : line.startsWith("+")
            ? "d-add"
            : line.startsWith("-")
              ? "d-del"
              : "";
    pre.appendChild(h("span", { class: `dl ${cls}` }, line, "\n"));
  }
  return pre;
}

export function block(b: ConvBlock): HTMLElement {
  if (b.kind === "text") return h("div", { class: "text" }, b.text);
  if (b.kind === "result")
    return h(
      "details",
      { class: "result", open: b.text.length < 2000 },
      h("summary", {}, `result of ${b.tool}${b.target ? ` '${b.target}'` : ""}`),
      h("pre", {}, b.text),
    );
  const head = h(
    "div",
    { class: "tool-head" },
    h("span", { class: "tool-name" }, b.name),
    b.path ? h("code", {}, ` ${b.path}`) : null,
  );
  const body: Child[] = [];
  if (b.command !== undefined) body.push(h("pre", { class: "cmd" }, `$ ${b.command}`));
  if (b.replacements)
    for (const r of b.replacements)
      body.push(
        diffView(
          [...r.search.split("\n").map((l) => `-${l}`), ...r.replace.split("\n").map((l) => `+${l}`)].join(
            "\n",
          ),
          `replace block in ${b.path ?? "a file"}`,
        ),
      );
  else if (b.name === "write_to_file" && b.content !== undefined)
    body.push(
      h("pre", { class: "file", "aria-label": `content written to ${b.path ?? "a file"}` }, b.content),
    );
  else if (b.content !== undefined) body.push(h("div", { class: "text" }, b.content));
  else if (b.command === undefined)
    body.push(
      h(
        "pre",
        {},
        Object.entries(b.params).map(([k, v]) => `${k}: ${v}\n`),
      ),
    );
  return h("div", { class: `tool t-${b.name}` }, head, body);
}

export function conversation(msgs: readonly ConvMessage[], note?: string): HTMLElement {
  return h(
    "ol",
    { class: "conv" },
    note ? h("li", { class: "muted" }, note) : null,
    msgs.map((m, i) =>
      h(
        "li",
        { class: `msg r-${m.role}` },
        h("div", { class: "role" }, `${i + 1}. ${m.role}`),
        m.role === "system"
          ? h("details", {}, h("summary", {}, "system prompt"), m.blocks.map(block))
          : m.blocks.map(block),
      ),
    ),
  );
}
