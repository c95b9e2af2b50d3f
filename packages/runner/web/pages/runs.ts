import type { CompareKind } from "../../src/view/compare.js";
import type { IndexResponse } from "../../src/view/responses.js";
import { api, boot } from "../data.js";
import { fmtMs, fmtReward, h } from "../dom.js";
import {
  evalHref,
  fmtBytes,
  fmtPct,
  layout,
  link,
  outcomeBadge,
  runHref,
  stateLabel,
  table,
  vsHref,
} from "../shell.js";

/** `#/`: the runs and evals under the served root, and the pickers for comparing two. */

export async function runsPage(): Promise<void> {
  const idx = await api<IndexResponse>("/api/index");
  layout(
    "Runs",
    [["#/", "Runs"]],
    h("p", { class: "muted" }, `${idx.runs.length} run(s), ${idx.evals.length} eval(s) under ${idx.root}`),
    comparePicker(
      "runs",
      idx.runs.map((r) => [r.ref, r.runId]),
    ),
    comparePicker(
      "evals",
      idx.evals.map((e) => [e.ref, e.summary.evalId ?? e.name]),
    ),
    runsSection(idx.runs.map(runRow)),
    evalsSection(idx.evals.map(evalRow)),
  );
}

type RunEntry = IndexResponse["runs"][number];
type EvalEntry = IndexResponse["evals"][number];

/** One run's row in the runs table. */
function runRow(r: RunEntry): HTMLTableRowElement {
  return h(
    "tr",
    { "data-href": runHref(r.ref) },
    h("td", {}, link(runHref(r.ref), r.runId)),
    h("td", {}, r.createdAt.replace("T", " ").slice(0, 19)),
    h("td", {}, r.tasks),
    h("td", {}, r.policies.join(", ")),
    h("td", {}, `${r.finished}/${r.expected}`),
    h("td", {}, fmtReward(r.meanReward)),
    h(
      "td",
      {},
      Object.entries(r.outcomes)
        .filter(([, n]) => n > 0)
        .map(([o, n]) => [outcomeBadge(o), ` ${n} `]),
    ),
    h("td", {}, fmtMs(r.durationMs)),
    h("td", { class: "num" }, fmtBytes(r.bytes)),
    h("td", {}, r.error ? h("span", { class: "err" }, r.error) : stateLabel(r.state)),
  );
}

/** One eval report's row in the evals table. */
function evalRow(e: EvalEntry): HTMLTableRowElement {
  const x = e.summary;
  return h(
    "tr",
    { "data-href": evalHref(e.ref) },
    h("td", {}, link(evalHref(e.ref), x.evalId ?? e.name)),
    h("td", {}, (x.createdAt ?? "").replace("T", " ").slice(0, 19)),
    h(
      "td",
      {},
      (x.policies ?? []).map((p) =>
        h(
          "div",
          { title: p.policy },
          `${p.label}: pass@1 ${fmtPct(p.pass1)}, reward ${fmtReward(p.meanReward)}`,
        ),
      ),
    ),
    h(
      "td",
      {},
      x.items !== undefined ? `${x.items} × ${x.policies?.length ?? "?"} × ${x.trials ?? "?"}` : "–",
    ),
    h("td", {}, x.trajectories ?? "–"),
    h("td", { class: "num" }, fmtBytes(e.bytes)),
    h("td", {}, e.runRef ? link(runHref(e.runRef), "trajectories") : "–"),
    h(
      "td",
      {},
      e.error
        ? h("span", { class: "err" }, e.error)
        : [x.complete === false ? "interrupted · " : "", e.hasHtml ? "report.html" : "report.json only"],
    ),
  );
}

/** The runs table. */
function runsSection(rows: HTMLTableRowElement[]): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "runs-h" },
    h("h2", { id: "runs-h" }, "Runs"),
    table(
      "Runs, newest first",
      [
        "run",
        "created (UTC)",
        "tasks",
        "policies",
        "trajectories",
        "mean reward",
        "outcomes",
        "duration",
        "data (metrics + groups)",
        "state",
      ],
      rows,
    ),
  );
}

/** The eval reports' table, or a line saying there are none. */
function evalsSection(evals: HTMLTableRowElement[]): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "evals-h" },
    h("h2", { id: "evals-h" }, "Evals"),
    evals.length
      ? table(
          "Eval reports",
          [
            "eval",
            "created (UTC)",
            "policy: pass@1, mean reward",
            "items × policies × trials",
            "trials",
            "report.json",
            "run",
            "report",
          ],
          evals,
        )
      : h("p", {}, "No eval reports (evals/*/report.json)."),
  );
}

/** Two selects and a button that open the side-by-side page (only with two or more to pick from). */
function comparePicker(kind: CompareKind, options: [string, string][]): HTMLElement | null {
  if (options.length < 2 || boot.mode === "export") return null;
  const pick = (label: string, initial: number) => {
    const sel = h(
      "select",
      { "aria-label": `${kind === "runs" ? "run" : "eval"} ${label}`, class: `pick-${label}` },
      options.map(([ref, name], i) => h("option", { value: ref, selected: i === initial }, name)),
    );
    return sel;
  };
  const a = pick("A", 1);
  const b = pick("B", 0);
  return h(
    "form",
    {
      class: `compare-pick compare-${kind}`,
      onsubmit: (e: Event) => {
        e.preventDefault();
        location.hash = vsHref(kind, a.value, b.value);
      },
    },
    `Compare two ${kind}: A `,
    a,
    " with B ",
    b,
    " ",
    h("button", { type: "submit" }, `Compare ${kind}`),
  );
}
