import { failureMessage } from "../src/eval/failure-message.js";
import { outcomeLook } from "../src/eval/outcome-look.js";
import type { CompareKind, CompareResponse, CompareRow, CompareSide } from "../src/view/compare.js";
import type { ConvBlock, ConvMessage } from "../src/view/conversation.js";
import type { GroupRow, TrajectoryRow } from "../src/view/query.js";
import type {
  IndexResponse,
  RunResponse,
  TokensResponse,
  TrajectoryResponse,
} from "../src/view/responses.js";
import { SEGMENT } from "../src/view/segment.js";
import { tokenSpans } from "../src/view/token-spans.js";
import type { SearchResponse } from "../src/view/transcript-search.js";
import { api, boot, evalSource } from "./data.js";
import { bar, type Child, fmtInt, fmtMs, fmtReward, h } from "./dom.js";

const fmtBytes = (n: number) =>
  n >= 1e9
    ? `${(n / 1e9).toFixed(2)} GB`
    : n >= 1e6
      ? `${(n / 1e6).toFixed(1)} MB`
      : `${Math.ceil(n / 1e3)} kB`;
const fmtPct = (x: number | null | undefined) =>
  x === null || x === undefined ? "–" : `${Math.round(x * 100)}%`;

/**
 * flakegym view's app. Hash routes:
 *   #/                         runs and evals
 *   #/run/<ref>?<filters>      one run: groups and trajectories
 *   #/t/<ref>/<id>             one trajectory (#/t/<ref>/<id>/tokens: its token view)
 *   #/compare/<ref>/<a>/<b>    two trajectories side by side
 *   #/eval/<ref>               an eval's report
 *   #/vs/<runs|evals>/<a>/<b>  two runs or two evals side by side (?page=)
 * Keys: j/k move through table rows, Enter opens, / focuses the first filter, u goes up.
 */

const app = document.getElementById("app") as HTMLElement;
let liveTimer: ReturnType<typeof setTimeout> | undefined;
let renderSeq = 0;

const enc = encodeURIComponent;
const link = (href: string, text: Child, attrs: Record<string, string> = {}) =>
  h("a", { href, ...attrs }, text);
const runHref = (ref: string) => `#/run/${enc(ref || ".")}`;
const trajHref = (ref: string, id: string) => `#/t/${enc(ref || ".")}/${enc(id)}`;
const evalHref = (ref: string) => `#/eval/${enc(ref || ".")}`;
const vsHref = (kind: CompareKind, a: string, b: string) => `#/vs/${kind}/${enc(a || ".")}/${enc(b || ".")}`;
/** The eval's rollout run, whose trajectories are its trials. */
const evalRunRef = (ref: string) => (ref ? `${ref}/run` : "run");
/** The eval a run belongs to (`<eval>/run`), as a breadcrumb; none for a plain run. */
const evalCrumb = (runRef: string): [string, string][] => {
  if (runRef !== "run" && !runRef.endsWith("/run")) return [];
  const ref = runRef.slice(0, -"run".length).replace(/\/$/, "");
  return [[evalHref(ref), `eval ${ref || "."}`]];
};
const refOf = (s: string) => (decodeURIComponent(s) === "." ? "" : decodeURIComponent(s));

function layout(title: string, crumbs: [string, string][], ...body: Child[]): void {
  document.title = `${title} · flakegym view`;
  app.replaceChildren(
    h("a", { class: "skip", href: "#main", onclick: skipToMain }, "Skip to content"),
    h(
      "header",
      { class: "top" },
      h("span", { class: "brand" }, "flakegym view"),
      h(
        "nav",
        { "aria-label": "Breadcrumb" },
        h(
          "ol",
          {},
          crumbs.map(([href, label], i) =>
            h(
              "li",
              {},
              i === crumbs.length - 1 ? h("span", { "aria-current": "page" }, label) : link(href, label),
            ),
          ),
        ),
      ),
      boot.mode === "export" ? h("span", { class: "badge" }, "exported snapshot") : null,
    ),
    h("main", { id: "main", tabindex: "-1" }, h("h1", {}, title), ...body),
    h("footer", {}, "keys: j / k move, Enter opens, / filters, u goes up"),
  );
}

function skipToMain(e: Event) {
  e.preventDefault();
  document.getElementById("main")?.focus();
}

/** An outcome count (no reward): neutral colours by kind. */
const outcomeBadge = (o: string, limit?: string) =>
  h("span", { class: `outcome o-${o.replace(/[^a-z_]/g, "")}` }, limit ? `${o} (${limit})` : o);

/** One trajectory's outcome with its reward: never a success colour when it did not pass. */
const outcomeChip = (o: string, reward: number | null | undefined, limit?: string) => {
  const look = outcomeLook(o, reward, limit);
  return h("span", { class: `outcome tone-${look.tone}` }, look.label);
};

const timingBar = (t: TrajectoryRow["timings"]) =>
  bar(
    [
      { label: "snapshot", value: t.snapshot, cls: "p-snapshot" },
      { label: "fork", value: t.fork, cls: "p-fork" },
      { label: "boot", value: t.boot, cls: "p-boot" },
      { label: "agent", value: t.agent, cls: "p-agent" },
      { label: "score", value: t.score, cls: "p-score" },
    ],
    `snapshot ${fmtMs(t.snapshot)}, fork ${fmtMs(t.fork)}, boot ${fmtMs(t.boot)}, agent ${fmtMs(t.agent)}, score ${fmtMs(t.score)}`,
  );

function table(caption: string, head: (string | HTMLElement)[], rows: HTMLTableRowElement[], cls = "") {
  return h(
    "table",
    { class: `grid ${cls}` },
    h("caption", {}, caption),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        head.map((c) => h("th", { scope: "col" }, c)),
      ),
    ),
    h("tbody", {}, rows),
  );
}

// ---------- runs ----------

async function runsPage(): Promise<void> {
  const idx = await api<IndexResponse>("/api/index");
  const rows = idx.runs.map((r) =>
    h(
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
      h("td", {}, r.error ? h("span", { class: "err" }, r.error) : r.complete ? "complete" : "in progress"),
    ),
  );
  const evals = idx.evals.map((e) => {
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
  });
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
    h(
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
    ),
    h(
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
    ),
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

async function vsPage(kind: CompareKind, a: string, b: string, params: URLSearchParams): Promise<void> {
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

async function runPage(ref: string, params: URLSearchParams, seq: number): Promise<void> {
  const q = Object.fromEntries(params);
  const run = await api<RunResponse>("/api/run", { run: ref, ...q });
  if (seq !== renderSeq) return;
  const setParam = (k: string, v: string) => {
    const p = new URLSearchParams(params);
    if (v) p.set(k, v);
    else p.delete(k);
    if (k !== "page") p.delete("page");
    location.hash = `${runHref(ref)}?${p}`;
  };
  const sort = params.get("sort") ?? "id";
  const dir = params.get("dir") ?? "asc";
  const page = Number(params.get("page") ?? 0);
  const size = Number(params.get("size") ?? 100);
  const f = run.facts;

  const groupRow = (g: GroupRow) =>
    h(
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

  const sortHead = (key: string, label: string) => {
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
  };

  const trajRow = (r: TrajectoryRow) =>
    h(
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

  const outcomes = f.outcomes.length ? f.outcomes : [...new Set(run.rows.map((r) => r.outcome))];
  const filters = h(
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
          onchange: (e: Event) => setParam("outcome", (e.target as HTMLSelectElement).value),
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
          onchange: (e: Event) => setParam(k, (e.target as HTMLInputElement).value),
        }),
      ),
    ),
  );
  const pages = Math.max(1, Math.ceil(run.total / size));
  const pager = h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    h(
      "button",
      { type: "button", disabled: page <= 0, onclick: () => setParam("page", String(page - 1)) },
      "‹ previous",
    ),
    ` page ${page + 1} of ${pages} (${run.total} of ${run.all} trajectories) `,
    h(
      "button",
      { type: "button", disabled: page + 1 >= pages, onclick: () => setParam("page", String(page + 1)) },
      "next ›",
    ),
  );
  layout(
    `Run ${f.runId}`,
    [["#/", "Runs"], ...evalCrumb(ref), [runHref(ref), f.runId]],
    h(
      "dl",
      { class: "facts" },
      fact("created", f.createdAt),
      fact("state", f.state === "in progress" ? "in progress (live)" : f.state),
      fact("tasks", String(f.tasks)),
      fact("group size", String(f.groupSize)),
      fact("policies", f.policies.join(", ")),
      fact("mean reward", fmtReward(f.meanReward)),
      fact("duration", fmtMs(f.durationMs)),
      fact("infra retries", String(f.infraRetries ?? run.rows.reduce((a, r) => a + r.infraRetries, 0))),
      fact("Atropos", f.atropos),
      fact("backend", f.backend),
      fact("images", f.images),
    ),
    run.skippedLines
      ? h("p", { class: "err" }, `${run.skippedLines} metrics line(s) did not parse and are left out`)
      : null,
    searchSection(ref, params),
    h(
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
        run.groups.map(groupRow),
      ),
      legend(),
    ),
    h(
      "section",
      { "aria-labelledby": "traj-h" },
      h("h2", { id: "traj-h" }, "Trajectories"),
      filters,
      table(
        "Trajectories (click a column to sort)",
        SORTS.map(([k, l]) => sortHead(k, l)),
        run.rows.map(trajRow),
        "trajectories",
      ),
      pager,
    ),
  );
  for (const th of app.querySelectorAll("table.trajectories thead th")) {
    const b = th.querySelector("button");
    const key = SORTS.find(([, l]) => b?.textContent?.startsWith(l))?.[0];
    th.setAttribute("aria-sort", key === sort ? (dir === "asc" ? "ascending" : "descending") : "none");
  }
  if (f.state !== "complete" && boot.mode === "server") watch(ref, run.stamp, seq);
}

/** Live updates: re-render the run when its files change (cheap stat-based stamp, every 2 s). */
function watch(ref: string, stamp: string, seq: number) {
  clearTimeout(liveTimer);
  liveTimer = setTimeout(async () => {
    if (seq !== renderSeq) return;
    try {
      const now = await api<{ stamp: string }>("/api/stamp", { run: ref });
      if (seq !== renderSeq) return;
      if (now.stamp !== stamp) void route();
      else watch(ref, stamp, seq);
    } catch {
      watch(ref, stamp, seq);
    }
  }, 2000);
}

const fact = (k: string, v: Child) => [h("dt", {}, k), h("dd", {}, v)];

const legend = () =>
  h(
    "p",
    { class: "legend" },
    "timings: ",
    ["snapshot", "fork", "boot", "agent", "score"].map((p) => [
      h("span", { class: `seg key p-${p}` }),
      ` ${p} `,
    ]),
  );

// ---------- trajectory ----------

function diffView(diff: string, label: string): HTMLElement {
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

function block(b: ConvBlock): HTMLElement {
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

function conversation(msgs: readonly ConvMessage[], note?: string): HTMLElement {
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

/** A hidden test's row: failed ones show their failing assertion and, folded, their output. */
function testRow(set: string, name: string, status: string, output: string | undefined) {
  const failed = status !== "passed";
  return h(
    "tr",
    { class: failed ? "test-failed" : "" },
    h("td", {}, set),
    h("th", { scope: "row" }, name),
    h("td", { class: `ts-${status}` }, status),
    h(
      "td",
      {},
      failed
        ? [
            h("div", { class: "assertion" }, status === "missing" ? "did not run" : failureMessage(output)),
            output
              ? h("details", {}, h("summary", {}, "test output"), h("pre", { class: "test-output" }, output))
              : null,
          ]
        : "",
    ),
  );
}

async function trajectoryPage(ref: string, id: string, params: URLSearchParams): Promise<void> {
  const t = await api<TrajectoryResponse>("/api/trajectory", { run: ref, id });
  const r = t.result;
  const s = t.score;
  const other = t.siblings.find((x) => x !== id);
  const tests = s?.testResults
    ? (["failToPass", "passToPass"] as const).flatMap((k) =>
        Object.entries(s.testResults?.[k] ?? {}).map(([name, status]) =>
          testRow(k === "failToPass" ? "FAIL_TO_PASS" : "PASS_TO_PASS", name, status, s.testOutput?.[name]),
        ),
      )
    : [];
  layout(
    `Trajectory ${id}`,
    [
      ["#/", "Runs"],
      ...evalCrumb(ref),
      [runHref(ref), t.provenance.runId ? String(t.provenance.runId) : ref],
      [trajHref(ref, id), id],
    ],
    h(
      "nav",
      { class: "actions", "aria-label": "Trajectory views" },
      link(`${trajHref(ref, id)}/tokens`, "Token view"),
      other ? link(`#/compare/${enc(ref || ".")}/${enc(id)}/${enc(other)}`, `Compare with ${other}`) : null,
    ),
    r
      ? h(
          "dl",
          { class: "facts" },
          fact("task", r.taskId),
          fact("policy", r.policy),
          fact("outcome", [
            outcomeChip(r.outcome.kind, r.reward, "limit" in r.outcome ? r.outcome.limit : undefined),
            ` ${r.outcome.detail}`,
          ]),
          fact("reward", fmtReward(r.reward)),
          fact("turns", String(r.counts.turns)),
          fact("tokens in / out", `${fmtInt(r.counts.tokensIn)} / ${fmtInt(r.counts.tokensOut)}`),
          fact("finished", r.finishedAt),
          fact("timings", [
            timingBar({
              snapshot: r.timings.snapshotMs,
              fork: r.timings.forkMs,
              boot: r.timings.bootMs,
              agent: r.timings.agentMs,
              score: r.timings.scoreMs,
            }),
            ` agent ${fmtMs(r.timings.agentMs)}, score ${fmtMs(r.timings.scoreMs)}, boot ${fmtMs(r.timings.bootMs)}`,
          ]),
          fact(
            "infra retries",
            r.infraRetries.length
              ? r.infraRetries.map((a) => h("div", {}, `#${a.attempt} ${a.at}: ${a.detail}`))
              : "none",
          ),
        )
      : h("p", { class: "muted" }, "result.json is not written yet: the trajectory is still running."),
    h(
      "section",
      { "aria-labelledby": "reward-h" },
      h("h2", { id: "reward-h" }, "Reward"),
      s
        ? [
            table(
              `Reward ${fmtReward(s.reward)}: terms`,
              ["term", "weight", "value", "detail"],
              s.terms.map((term) =>
                h(
                  "tr",
                  {},
                  h("th", { scope: "row" }, term.name),
                  h("td", {}, term.weight),
                  h("td", {}, fmtReward(term.value)),
                  h("td", {}, h("pre", {}, term.detail ?? "")),
                ),
              ),
            ),
            s.gate ? h("p", { class: "err" }, `gate: ${JSON.stringify(s.gate)}`) : null,
            h(
              "p",
              {},
              `tampered: ${s.tampered?.length ? s.tampered.join(", ") : "none"}; test files touched: ${s.touchedTestFiles.length ? s.touchedTestFiles.join(", ") : "none"}; flaky: ${s.flaky.length ? s.flaky.join(", ") : "none"}`,
            ),
            s.decoys
              ? h(
                  "p",
                  {},
                  `decoys: ${s.decoys.guarded.length} graded test(s) twinned by a test that must fail${
                    s.decoys.unguarded.length
                      ? `; unguarded: ${s.decoys.unguarded.map((u) => `${u.id} (${u.reason})`).join(", ")}`
                      : ""
                  }`,
                )
              : null,
            s.twin
              ? h(
                  "p",
                  s.twin.passed ? { class: "err" } : {},
                  `decoy twin run (the eval command on hidden tests expecting other values; must fail): ${
                    s.twin.passed ? "passed" : "failed"
                  }${s.twin.exitCode === undefined ? "" : `, exit ${s.twin.exitCode}`}${s.twin.timedOut ? ", timed out" : ""}`,
                )
              : null,
            s.ignoredTests?.length
              ? h(
                  "p",
                  {},
                  `the agent's own new test files, left out of scoring: ${s.ignoredTests.join(", ")}`,
                )
              : null,
            s.suspicious?.length
              ? table(
                  "Suspicious: what the static screen flagged in the scored diff",
                  ["where", "class", "why", "line"],
                  s.suspicious.map((x) =>
                    h(
                      "tr",
                      { class: "suspicious" },
                      h("th", { scope: "row" }, `${x.file}:${x.line}`),
                      h("td", {}, x.class),
                      h("td", {}, x.reason),
                      h("td", {}, h("code", {}, x.text)),
                    ),
                  ),
                )
              : null,
            tests.length
              ? h(
                  "section",
                  { id: "tests", "aria-label": "Hidden tests" },
                  table(
                    "Hidden tests (failing ones first in the report)",
                    ["set", "test", "status", "why"],
                    tests,
                  ),
                )
              : null,
          ]
        : h("p", { class: "muted" }, "No score.json."),
    ),
    h(
      "section",
      { "aria-labelledby": "diff-h" },
      h("h2", { id: "diff-h" }, "Final diff"),
      t.diff === null
        ? h("p", { class: "muted" }, "No diff.patch.")
        : t.diff === ""
          ? h("p", {}, "Empty diff: the agent changed nothing.")
          : diffView(t.diff, "diff.patch"),
      t.diffTruncated
        ? h("p", { class: "err" }, "diff.patch is larger than the viewer's cap; truncated")
        : null,
    ),
    h(
      "section",
      { "aria-labelledby": "conv-h" },
      h("h2", { id: "conv-h" }, "Conversation"),
      t.lastTurn
        ? h(
            "p",
            { class: "muted" },
            `as of model call ${t.lastTurn.seq ?? "?"} (${t.lastTurn.status ?? "?"}, ${t.lastTurn.upstream ?? ""})`,
          )
        : null,
      conversation(t.conversation, t.conversationNote),
    ),
    h(
      "section",
      { "aria-labelledby": "prov-h" },
      h("h2", { id: "prov-h" }, "Provenance"),
      h(
        "dl",
        { class: "facts" },
        Object.entries(t.provenance).map(([k, v]) => fact(k, typeof v === "string" ? v : JSON.stringify(v))),
      ),
    ),
  );
  if (params.get("at") === "tests") {
    const at =
      document.querySelector<HTMLElement>("#tests tr.test-failed") ?? document.getElementById("tests");
    at?.scrollIntoView({ block: "center" });
  }
}

// ---------- tokens ----------

/** Heat colour of a trained token's logprob: green (p≈1) to red (p≈0). */
function heat(logprob: number): string {
  const p = Math.exp(Math.max(-20, Math.min(0, logprob)));
  return `hsl(${Math.round(120 * p)}, 70%, 85%)`;
}

async function tokensPage(ref: string, id: string): Promise<void> {
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

async function comparePage(ref: string, a: string, b: string): Promise<void> {
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

/** The frame of the eval report on screen, whose messages open trials and files. */
let evalFrame: { frame: HTMLIFrameElement; ref: string } | undefined;

async function evalPage(ref: string): Promise<void> {
  const src = evalSource(ref);
  const frame = h("iframe", {
    title: `eval report ${ref || "."}`,
    sandbox: "allow-scripts",
    class: "report",
  });
  if ("src" in src) frame.src = src.src;
  else frame.srcdoc = src.srcdoc;
  evalFrame = { frame, ref };
  layout(
    `Eval ${ref || "."}`,
    [
      ["#/", "Runs"],
      [evalHref(ref), ref || "."],
    ],
    h(
      "nav",
      { class: "actions", "aria-label": "Eval views" },
      link(runHref(evalRunRef(ref)), "All trials as trajectories"),
      " · ",
      link(`${evalHref(ref)}/file/summary.md`, "summary.md"),
      " · click a heat-map cell or a trial row to open that trial",
    ),
    frame,
  );
}

/** A trial link clicked in the report's frame: open that trial's page (at its failing tests). */
window.addEventListener("message", (e: MessageEvent) => {
  const cur = evalFrame;
  if (!cur || e.source !== cur.frame.contentWindow) return;
  const msg = e.data as { flakegym?: unknown; trajectory?: unknown; name?: unknown } | null;
  if (msg?.flakegym === "open" && typeof msg.trajectory === "string" && SEGMENT.test(msg.trajectory))
    location.hash = `${trajHref(evalRunRef(cur.ref), msg.trajectory)}?at=tests`;
  else if (msg?.flakegym === "file" && (msg.name === "summary.md" || msg.name === "report.json"))
    location.hash = `${evalHref(cur.ref)}/file/${msg.name}`;
});

async function evalFilePage(ref: string, name: string): Promise<void> {
  const f = await api<{ name: string; text: string; truncated: boolean }>("/api/eval-file", { ref, name });
  layout(
    `${name} of eval ${ref || "."}`,
    [
      ["#/", "Runs"],
      [evalHref(ref), ref || "."],
      [`${evalHref(ref)}/file/${name}`, name],
    ],
    f.truncated
      ? h("p", { class: "err" }, `${name} is larger than the viewer's cap; its start is shown`)
      : null,
    h("pre", { class: "file", tabindex: "0" }, f.text),
  );
}

// ---------- routing and keys ----------

async function route(): Promise<void> {
  const seq = ++renderSeq;
  clearTimeout(liveTimer);
  evalFrame = undefined;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path = "/", qs = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean);
  try {
    if (parts[0] === "run" && parts[1]) await runPage(refOf(parts[1]), new URLSearchParams(qs), seq);
    else if (parts[0] === "t" && parts[1] && parts[2] && parts[3] === "tokens")
      await tokensPage(refOf(parts[1]), decodeURIComponent(parts[2]));
    else if (parts[0] === "t" && parts[1] && parts[2])
      await trajectoryPage(refOf(parts[1]), decodeURIComponent(parts[2]), new URLSearchParams(qs));
    else if (parts[0] === "compare" && parts[1] && parts[2] && parts[3])
      await comparePage(refOf(parts[1]), decodeURIComponent(parts[2]), decodeURIComponent(parts[3]));
    else if (parts[0] === "eval" && parts[1] && parts[2] === "file" && parts[3])
      await evalFilePage(refOf(parts[1]), decodeURIComponent(parts[3]));
    else if (parts[0] === "eval" && parts[1]) await evalPage(refOf(parts[1]));
    else if (parts[0] === "vs" && (parts[1] === "runs" || parts[1] === "evals") && parts[2] && parts[3])
      await vsPage(parts[1], refOf(parts[2]), refOf(parts[3]), new URLSearchParams(qs));
    else await runsPage();
  } catch (e) {
    layout(
      "Error",
      [["#/", "Runs"]],
      h("p", { class: "err", role: "alert" }, e instanceof Error ? e.message : String(e)),
    );
  }
  if (seq === renderSeq) app.setAttribute("data-ready", String(seq));
}

function rowsOfPage(): HTMLTableRowElement[] {
  return [...document.querySelectorAll<HTMLTableRowElement>("tbody tr[data-href]")];
}

document.addEventListener("keydown", (e) => {
  const target = e.target as HTMLElement;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName)) {
    if (e.key === "Escape") target.blur();
    return;
  }
  const rows = rowsOfPage();
  const at = rows.findIndex((r) => r.contains(document.activeElement));
  if (e.key === "j" || e.key === "k") {
    if (rows.length === 0) return;
    const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + (e.key === "j" ? 1 : -1)))]!;
    next.querySelector<HTMLElement>("a")?.focus();
    e.preventDefault();
  } else if (e.key === "/") {
    const f = document.querySelector<HTMLElement>(".filters select, .filters input");
    if (f) {
      f.focus();
      e.preventDefault();
    }
  } else if (e.key === "u") {
    const crumbs = document.querySelectorAll<HTMLAnchorElement>("header nav a");
    const up = crumbs[crumbs.length - 1];
    if (up) location.hash = up.getAttribute("href") ?? "#/";
  }
});

window.addEventListener("hashchange", () => void route());
void route();
