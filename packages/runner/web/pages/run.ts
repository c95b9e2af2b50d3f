import type { GroupRow, TrajectoryRow } from "../../src/view/query.js";
import type { RunResponse } from "../../src/view/responses.js";
import type { SearchResponse } from "../../src/view/transcript-search.js";
import { api, boot } from "../data.js";
import { fmtInt, fmtMs, fmtReward, h } from "../dom.js";
import {
  app,
  enc,
  evalCrumb,
  fact,
  layout,
  legend,
  link,
  outcomeBadge,
  outcomeChip,
  runHref,
  stateLabel,
  table,
  timingBar,
  trajHref,
  view,
} from "../shell.js";

/** `#/run/<ref>`: one run's groups and trajectories, filters, transcript search and live updates. */

let searchSeq = 0;

/**
 * The transcript search box: the server reads the run's transcripts for the text (a newer query
 * cancels the older one there; here a stale answer is dropped). The query stays in the URL
 * (`?search=`), so a re-render or a reload keeps it. Snippets are text nodes like everything else.
 */
function searchSection(ref: string, params: URLSearchParams): HTMLElement {
  const out = h("div", { class: "search-results", "aria-live": "polite" });
  const input = h("input", {
    id: "f-search",
    type: "search",
    value: params.get("search") ?? "",
    placeholder: "text in any transcript",
  });
  const run = async (q: string) => {
    const seq = ++searchSeq;
    const p = new URLSearchParams(params);
    if (q) p.set("search", q);
    else p.delete("search");
    history.replaceState(null, "", `#${location.hash.slice(1).split("?")[0]}?${p}`);
    if (q.length < 2) return void out.replaceChildren(q ? "type at least 2 characters" : "");
    out.replaceChildren(h("p", { class: "muted" }, "searching…"));
    try {
      const r = await api<SearchResponse>("/api/search", { run: ref, q });
      if (seq !== searchSeq) return;
      const why =
        r.stopped === "done"
          ? ""
          : r.stopped === "hit limit"
            ? " — first hits only"
            : ` — stopped: ${r.stopped}`;
      out.replaceChildren(
        h(
          "p",
          {},
          `${r.hits.length} trajectory(ies) match, ${r.searched} of ${r.total} transcripts read${why}`,
        ),
        h(
          "ol",
          { class: "hits" },
          r.hits.map((hit) =>
            h(
              "li",
              {},
              link(trajHref(ref, hit.id), hit.id),
              " ",
              h(
                "code",
                { class: "snippet" },
                hit.snippet.slice(0, hit.match[0]),
                h("mark", {}, hit.snippet.slice(hit.match[0], hit.match[1])),
                hit.snippet.slice(hit.match[1]),
              ),
            ),
          ),
        ),
      );
    } catch (e) {
      if (seq === searchSeq)
        out.replaceChildren(h("p", { class: "err" }, e instanceof Error ? e.message : String(e)));
    }
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => void run(input.value), 300);
  });
  if (input.value) void run(input.value);
  return h(
    "section",
    { "aria-labelledby": "search-h" },
    h("h2", { id: "search-h" }, "Search transcripts"),
    boot.mode === "export"
      ? h("p", { class: "muted" }, "transcript search needs the server (flakegym view), not an export")
      : [
          h(
            "form",
            {
              role: "search",
              "aria-label": "Search transcripts",
              onsubmit: (e: Event) => e.preventDefault(),
            },
            h("label", {}, "transcripts contain ", input),
          ),
          out,
        ],
  );
}

const SORTS: [string, string][] = [
  ["id", "trajectory"],
  ["task", "task"],
  ["policy", "policy"],
  ["outcome", "outcome"],
  ["reward", "reward"],
  ["turns", "turns"],
  ["tokens", "tokens"],
  ["time", "timings"],
  ["retries", "infra retries"],
];

/** What a run page is drawn from: the run's answer and the page's query (sort, direction, page). */
interface RunView {
  readonly ref: string;
  readonly params: URLSearchParams;
  readonly run: RunResponse;
  readonly sort: string;
  readonly dir: string;
  readonly page: number;
  readonly size: number;
}

/** Goes to the same run with query parameter `k` set to `value` (removed when empty; back to page 0). */
function setParam(v: RunView, k: string, value: string): void {
  const p = new URLSearchParams(v.params);
  if (value) p.set(k, value);
  else p.delete(k);
  if (k !== "page") p.delete("page");
  location.hash = `${runHref(v.ref)}?${p}`;
}

export async function runPage(ref: string, params: URLSearchParams, seq: number): Promise<void> {
  const q = Object.fromEntries(params);
  const run = await api<RunResponse>("/api/run", { run: ref, ...q });
  if (seq !== view.renderSeq) return;
  const v: RunView = {
    ref,
    params,
    run,
    sort: params.get("sort") ?? "id",
    dir: params.get("dir") ?? "asc",
    page: Number(params.get("page") ?? 0),
    size: Number(params.get("size") ?? 100),
  };
  const f = run.facts;
  layout(
    `Run ${f.runId}`,
    [["#/", "Runs"], ...evalCrumb(ref), [runHref(ref), f.runId]],
    runFacts(run),
    run.skippedLines
      ? h("p", { class: "err" }, `${run.skippedLines} metrics line(s) did not parse and are left out`)
      : null,
    searchSection(ref, params),
    groupsSection(v),
    trajectoriesSection(v),
  );
  for (const th of app.querySelectorAll("table.trajectories thead th")) {
    const b = th.querySelector("button");
    const key = SORTS.find(([, l]) => b?.textContent?.startsWith(l))?.[0];
    th.setAttribute("aria-sort", key === v.sort ? (v.dir === "asc" ? "ascending" : "descending") : "none");
  }
  if (f.state !== "complete" && boot.mode === "server") watch(ref, run.stamp, seq);
}

/** The run's facts (run.json and summary.json). */
function runFacts(run: RunResponse): HTMLElement {
  const f = run.facts;
  return h(
    "dl",
    { class: "facts" },
    fact("created", f.createdAt),
    fact("state", stateLabel(f.state)),
    fact("tasks", String(f.tasks)),
    fact("group size", String(f.groupSize)),
    fact("policies", f.policies.join(", ")),
    fact("mean reward", fmtReward(f.meanReward)),
    fact("duration", fmtMs(f.durationMs)),
    fact("infra retries", String(f.infraRetries ?? run.rows.reduce((a, r) => a + r.infraRetries, 0))),
    fact("Atropos", f.atropos),
    fact("backend", f.backend),
    fact("images", f.images),
  );
}

/** Per task: the group's rewards, outcomes, mean turns, tokens and timings. */
function groupsSection(v: RunView): HTMLElement {
  const { run } = v;
  return h(
    "section",
    { "aria-labelledby": "groups-h" },
    h("h2", { id: "groups-h" }, "Groups"),
    table(
      run.groups.length < run.groupsTotal
        ? `Groups of the tasks on this page (${run.groups.length} of ${run.groupsTotal}): rewards, outcomes, mean turns, tokens, per-phase timings`
        : "Per task: the group's rewards, outcomes, mean turns, tokens and per-phase timings",
      [
        "task",
        "trajectories",
        "mean reward",
        "rewards",
        "outcomes",
        "turns",
        "tokens",
        "timings",
        "Atropos",
        "infra retries",
      ],
      run.groups.map((g) => groupRow(v.ref, g)),
    ),
    legend(),
  );
}

/** The trajectories on this page: filters, a sortable table and the pager. */
function trajectoriesSection(v: RunView): HTMLElement {
  const { run } = v;
  return h(
    "section",
    { "aria-labelledby": "traj-h" },
    h("h2", { id: "traj-h" }, "Trajectories"),
    runFilters(v),
    table(
      "Trajectories (click a column to sort)",
      SORTS.map(([k, l]) => sortHead(v, k, l)),
      run.rows.map((r) => trajRow(v.ref, r)),
      "trajectories",
    ),
    pager(v),
  );
}

/** One task's group as a table row. */
function groupRow(ref: string, g: GroupRow): HTMLTableRowElement {
  return h(
    "tr",
    { "data-href": `${runHref(ref)}?task=${enc(g.task)}` },
    h("th", { scope: "row" }, link(`${runHref(ref)}?task=${enc(g.task)}`, g.task)),
    h("td", {}, `${g.trajectories}/${g.expected ?? "?"}`),
    h("td", {}, fmtReward(g.meanReward)),
    h(
      "td",
      { class: "rewards" },
      g.rewards.map((r) =>
        h(
          "span",
          { class: `rw ${r === null ? "rn" : r >= 1 ? "r1" : r > 0 ? "rp" : "r0"}`, title: fmtReward(r) },
          fmtReward(r),
        ),
      ),
    ),
    h(
      "td",
      {},
      Object.entries(g.outcomes)
        .filter(([, n]) => n > 0)
        .map(([o, n]) => [outcomeBadge(o), ` ${n} `]),
    ),
    h("td", {}, g.turns.toFixed(1)),
    h("td", {}, fmtInt(g.tokens)),
    h("td", { class: "barcell" }, timingBar(g.timings)),
    h("td", {}, g.atropos),
    h("td", {}, g.infraRetries),
  );
}

/** A column head that sorts the trajectories by `key` (again: the other way). */
function sortHead(v: RunView, key: string, label: string): HTMLElement {
  const { params, ref, sort, dir } = v;
  const active = sort === key;
  const th = h(
    "button",
    {
      class: "sort",
      type: "button",
      onclick: () => {
        const p = new URLSearchParams(params);
        p.set("sort", key);
        p.set("dir", active && dir === "asc" ? "desc" : "asc");
        location.hash = `${runHref(ref)}?${p}`;
      },
    },
    label,
    active ? (dir === "asc" ? " ▲" : " ▼") : "",
  );
  th.setAttribute("aria-label", `sort by ${label}`);
  return th;
}

/** One trajectory as a table row. */
function trajRow(ref: string, r: TrajectoryRow): HTMLTableRowElement {
  return h(
    "tr",
    { "data-href": trajHref(ref, r.id) },
    h("th", { scope: "row" }, link(trajHref(ref, r.id), r.id)),
    h("td", {}, r.task),
    h("td", {}, r.policy ?? "–"),
    h("td", { title: r.detail }, outcomeChip(r.outcome, r.reward, r.limit)),
    h("td", { class: "num" }, fmtReward(r.reward)),
    h("td", { class: "num" }, r.turns),
    h("td", { class: "num" }, `${fmtInt(r.tokensIn)} / ${fmtInt(r.tokensOut)}`),
    h("td", { class: "barcell" }, timingBar(r.timings)),
    h(
      "td",
      { class: "num" },
      r.infraRetries,
      r.tampered ? h("span", { class: "err" }, ` tampered ${r.tampered}`) : null,
    ),
  );
}

/** The trajectory filters: outcome, task, policy and a reward range. */
function runFilters(v: RunView): HTMLElement {
  const { run, params } = v;
  const f = run.facts;
  const outcomes = f.outcomes.length ? f.outcomes : [...new Set(run.rows.map((r) => r.outcome))];
  return h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter trajectories",
      onsubmit: (e: Event) => e.preventDefault(),
    },
    h(
      "label",
      {},
      "outcome ",
      h(
        "select",
        {
          id: "f-outcome",
          onchange: (e: Event) => setParam(v, "outcome", (e.target as HTMLSelectElement).value),
        },
        h("option", { value: "" }, "any"),
        ["completed", "limits_exceeded", "timeout", "policy_error", "infra_error", "refused", ...outcomes]
          .filter((o, i, a) => a.indexOf(o) === i)
          .map((o) => h("option", { value: o, selected: params.get("outcome") === o }, o)),
      ),
    ),
    ...(["task", "policy", "minReward", "maxReward"] as const).map((k) =>
      h(
        "label",
        {},
        `${k} `,
        h("input", {
          id: `f-${k}`,
          type: k.endsWith("Reward") ? "number" : "search",
          step: "0.01",
          value: params.get(k) ?? "",
          onchange: (e: Event) => setParam(v, k, (e.target as HTMLInputElement).value),
        }),
      ),
    ),
  );
}

/** Previous and next page of trajectories. */
function pager(v: RunView): HTMLElement {
  const { run, page, size } = v;
  const pages = Math.max(1, Math.ceil(run.total / size));
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    h(
      "button",
      { type: "button", disabled: page <= 0, onclick: () => setParam(v, "page", String(page - 1)) },
      "‹ previous",
    ),
    ` page ${page + 1} of ${pages} (${run.total} of ${run.all} trajectories) `,
    h(
      "button",
      { type: "button", disabled: page + 1 >= pages, onclick: () => setParam(v, "page", String(page + 1)) },
      "next ›",
    ),
  );
}

/** Live updates: re-render the run when its files change (cheap stat-based stamp, every 2 s). */
function watch(ref: string, stamp: string, seq: number) {
  clearTimeout(view.liveTimer);
  view.liveTimer = setTimeout(async () => {
    if (seq !== view.renderSeq) return;
    try {
      const now = await api<{ stamp: string }>("/api/stamp", { run: ref });
      if (seq !== view.renderSeq) return;
      if (now.stamp !== stamp) void view.rerender();
      else watch(ref, stamp, seq);
    } catch {
      watch(ref, stamp, seq);
    }
  }, 2000);
}
