import type { TrajectoryResponse } from "../../src/view/responses.js";
import { conversation, diffView } from "../conversation-view.js";
import { api } from "../data.js";
import { fmtReward, h } from "../dom.js";
import { enc, layout, link, outcomeChip, runHref, trajHref } from "../shell.js";

/** `#/compare/<ref>/<a>/<b>`: two trajectories of a run side by side. */

export async function comparePage(ref: string, a: string, b: string): Promise<void> {
  const [ta, tb] = await Promise.all(
    [a, b].map((id) => api<TrajectoryResponse>("/api/trajectory", { run: ref, id })),
  );
  const col = (t: TrajectoryResponse, side: "a" | "b", other: string) =>
    h(
      "section",
      { class: "col", "aria-labelledby": `cmp-${side}` },
      h("h2", { id: `cmp-${side}` }, link(trajHref(ref, t.id), t.id)),
      h(
        "label",
        {},
        "trajectory ",
        h(
          "select",
          {
            onchange: (e: Event) => {
              const v = (e.target as HTMLSelectElement).value;
              location.hash = `#/compare/${enc(ref || ".")}/${enc(side === "a" ? v : other)}/${enc(side === "a" ? other : v)}`;
            },
          },
          t.siblings.map((s) => h("option", { value: s, selected: s === t.id }, s)),
        ),
      ),
      h(
        "p",
        {},
        `reward ${fmtReward(t.result?.reward)}, `,
        t.result ? outcomeChip(t.result.outcome.kind, t.result.reward) : "running",
        `, ${t.result?.counts.turns ?? "?"} turns`,
      ),
      h("h3", {}, "Diff"),
      t.diff ? diffView(t.diff, `diff of ${t.id}`) : h("p", {}, "Empty diff."),
      h("h3", {}, "Conversation"),
      conversation(
        t.conversation.filter((m) => m.role !== "system"),
        t.conversationNote,
      ),
    );
  layout(
    `Compare ${a} and ${b}`,
    [
      ["#/", "Runs"],
      [runHref(ref), ref || "run"],
      [location.hash, "compare"],
    ],
    h("div", { class: "compare" }, col(ta!, "a", b), col(tb!, "b", a)),
  );
}

// ---------- eval ----------
