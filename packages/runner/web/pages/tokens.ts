import type { TokensResponse } from "../../src/view/responses.js";
import { tokenSpans } from "../../src/view/token-spans.js";
import { api } from "../data.js";
import { fmtReward, h } from "../dom.js";
import { layout, runHref, trajHref } from "../shell.js";

/** `#/t/<ref>/<id>/tokens`: a trajectory's token view (trained and masked spans, logprob heat). */

/** Heat colour of a trained token's logprob: green (p≈1) to red (p≈0). */
export function heat(logprob: number): string {
  const p = Math.exp(Math.max(-20, Math.min(0, logprob)));
  return `hsl(${Math.round(120 * p)}, 70%, 85%)`;
}

export async function tokensPage(ref: string, id: string): Promise<void> {
  const t = await api<TokensResponse>("/api/tokens", { run: ref, id });
  const seqs = t.sequences.map((s, si) => {
    const box = h("div", {
      class: "tokens",
      role: "group",
      "aria-label": `sequence ${si + 1} tokens`,
      tabindex: "0",
    });
    const trained = s.masks.filter((m) => m !== -100).length;
    const tokenEl = (i: number) => {
      const tok = s.tokens[i]!;
      const isTrained = s.masks[i] !== -100;
      const lp = s.logprobs?.[i];
      const span = h(
        "span",
        {
          class: isTrained ? "tk trained" : "tk masked",
          title: `#${i} id ${tok}${isTrained ? " trained" : " masked"}${lp !== undefined ? ` logprob ${lp.toFixed(3)}` : ""}`,
        },
        s.text ? (s.text[i] ?? "") : `${tok} `,
      );
      if (isTrained && lp !== undefined) span.style.background = heat(lp);
      return span;
    };
    const draw = (into: HTMLElement, from: number, to: number) => {
      const frag = document.createDocumentFragment();
      for (let i = from; i < to; i++) frag.appendChild(tokenEl(i));
      into.appendChild(frag);
    };
    // long masked runs (the prompt first) are folded and drawn only when opened
    for (const span of tokenSpans(s.masks)) {
      if (!span.folded) {
        draw(box, span.start, span.end);
        continue;
      }
      const fold = h(
        "details",
        { class: "prompt-fold" },
        h(
          "summary",
          {},
          `${span.start === 0 ? "prompt" : "masked"}: ${span.end - span.start} tokens (#${span.start}–#${span.end - 1}), folded`,
        ),
      );
      fold.addEventListener("toggle", () => {
        if (fold.open && fold.childElementCount === 1) draw(fold, span.start, span.end);
      });
      box.appendChild(fold);
    }
    return h(
      "section",
      { class: "segment", "aria-labelledby": `seg-${si}` },
      h(
        "h2",
        { id: `seg-${si}` },
        s.segments !== null ? `Segment ${(s.segment ?? si) + 1} of ${s.segments}` : "Sequence",
      ),
      h(
        "p",
        {},
        `${s.tokens.length} tokens, ${trained} trained, ${s.tokens.length - trained} masked; score ${fmtReward(s.score)}`,
      ),
      s.split ? h("p", { class: "split" }, `segment boundary: ${s.split}`) : null,
      box,
    );
  });
  layout(
    `Tokens of ${id}`,
    [
      ["#/", "Runs"],
      [runHref(ref), ref || "run"],
      [trajHref(ref, id), id],
      [`${trajHref(ref, id)}/tokens`, "tokens"],
    ],
    h(
      "p",
      { class: "legend" },
      h("span", { class: "tk trained" }, "trained"),
      " ",
      h("span", { class: "tk masked" }, "masked (prompt, tool results)"),
      " — trained tokens are coloured by their inference logprob: ",
      h("span", { class: "tk trained", id: "heat-hi" }, "p≈1"),
      " ",
      h("span", { class: "tk trained", id: "heat-lo" }, "p≈0"),
    ),
    t.note ? h("p", { class: "muted" }, t.note) : null,
    seqs,
  );
  (document.getElementById("heat-hi") as HTMLElement).style.background = heat(0);
  (document.getElementById("heat-lo") as HTMLElement).style.background = heat(-10);
  // open at what was trained
  document.querySelector<HTMLElement>(".tokens .tk.trained")?.scrollIntoView({ block: "center" });
}

// ---------- compare ----------
