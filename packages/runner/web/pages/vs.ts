import type { CompareKind, CompareResponse, CompareRow, CompareSide } from "../../src/view/compare.js";
import { api } from "../data.js";
import { fmtReward, h } from "../dom.js";
import { enc, evalHref, fact, fmtPct, layout, link, runHref, table, vsHref } from "../shell.js";

/** `#/vs/<runs|evals>/<a>/<b>`: two runs or two evals side by side. */

const fmtSide = (s: CompareSide | null, kind: CompareKind) =>
  s === null
    ? "–"
    : kind === "evals"
      ? `${s.c}/${s.n} · pass@1 ${fmtPct(s.pass1)}`
      : `${s.n} · reward ${fmtReward(s.meanReward)}`;

const outcomesText = (o: Record<string, number> | undefined) =>
  Object.entries(o ?? {})
    .map(([k, n]) => `${k} ${n}`)
    .join(", ") || "–";

export async function vsPage(
  kind: CompareKind,
  a: string,
  b: string,
  params: URLSearchParams,
): Promise<void> {
  const page = Number(params.get("page") ?? 0);
  const c = await api<CompareResponse>("/api/compare", { kind, a, b, page: String(page) });
  const hrefOf = (ref: string) => (kind === "runs" ? runHref(ref) : evalHref(ref));
  const delta = (r: CompareRow) =>
    r.delta === null
      ? "–"
      : `${r.delta > 0 ? "+" : ""}${kind === "evals" ? fmtPct(r.delta) : fmtReward(r.delta)}`;
  const tone = (r: CompareRow) =>
    r.change === "regression"
      ? "bad"
      : r.change === "fix"
        ? "ok"
        : r.change === "same"
          ? "neutral"
          : "partial";
  const rows = c.rows.map((r) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, kind === "runs" ? link(`${runHref(b)}?task=${enc(r.key)}`, r.key) : r.key),
      h("td", {}, h("span", { class: `outcome tone-${tone(r)}` }, r.change)),
      h("td", { class: "num" }, fmtSide(r.a, kind)),
      h("td", { class: "num" }, fmtSide(r.b, kind)),
      h("td", { class: "num" }, delta(r)),
      kind === "evals"
        ? h(
            "td",
            { class: "num" },
            r.k === null ? "–" : `k=${r.k}: ${fmtPct(r.a?.passK)} → ${fmtPct(r.b?.passK)}`,
          )
        : null,
      h("td", {}, `${outcomesText(r.a?.outcomes)} → ${outcomesText(r.b?.outcomes)}`),
    ),
  );
  const pages = Math.max(1, Math.ceil(c.total / c.size));
  const go = (p: number) => {
    location.hash = `${vsHref(kind, a, b)}?page=${p}`;
  };
  layout(
    `Compare ${kind}`,
    [
      ["#/", "Runs"],
      [location.hash, `compare ${kind}`],
    ],
    h(
      "dl",
      { class: "facts" },
      fact("A", link(hrefOf(a), a || ".")),
      fact("B", link(hrefOf(b), b || ".")),
      fact("matched by", c.pairing),
      fact(
        "changes",
        Object.entries(c.counts)
          .map(([k, n]) => `${k} ${n}`)
          .join(", ") || "none",
      ),
    ),
    table(
      kind === "runs" ? "Per task, regressions first" : "Per item × policy, regressions first",
      [
        kind === "runs" ? "task" : "item × policy",
        "change",
        kind === "runs" ? "A: trajectories, mean reward" : "A: passed/scored, pass@1",
        kind === "runs" ? "B: trajectories, mean reward" : "B: passed/scored, pass@1",
        "Δ (B − A)",
        ...(kind === "evals" ? ["pass@k (A → B)"] : []),
        "outcomes (A → B)",
      ],
      rows,
      "versus",
    ),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      h("button", { type: "button", disabled: page <= 0, onclick: () => go(page - 1) }, "← previous"),
      ` page ${page + 1} of ${pages} (${c.total} rows) `,
      h("button", { type: "button", disabled: page + 1 >= pages, onclick: () => go(page + 1) }, "next →"),
    ),
  );
}

// ---------- run ----------
