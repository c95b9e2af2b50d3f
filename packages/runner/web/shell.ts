import { outcomeLook } from "../src/eval/outcome-look.js";
import type { CompareKind } from "../src/view/compare.js";
import type { TrajectoryRow } from "../src/view/query.js";
import type { RunState } from "../src/view/run-state.js";
import { boot } from "./data.js";
import { bar, type Child, fmtMs, h } from "./dom.js";

/** The viewer's frame: the page layout, links and routes' hrefs, tables, outcome chips and the state pages share. */

export const fmtBytes = (n: number) =>
  n >= 1e9
    ? `${(n / 1e9).toFixed(2)} GB`
    : n >= 1e6
      ? `${(n / 1e6).toFixed(1)} MB`
      : `${Math.ceil(n / 1e3)} kB`;

export const fmtPct = (x: number | null | undefined) =>
  x === null || x === undefined ? "–" : `${Math.round(x * 100)}%`;

export const app = document.getElementById("app") as HTMLElement;

/**
 * What the pages share across renders: the pending live update of a run page, the render in
 * progress (a page drawn for an older one gives up), the embedded eval report, and how to render
 * the current route again (main.ts sets it).
 */
export const view = {
  liveTimer: undefined as ReturnType<typeof setTimeout> | undefined,
  renderSeq: 0,
  evalFrame: undefined as { frame: HTMLIFrameElement; ref: string } | undefined,
  rerender: (): Promise<void> => Promise.resolve(),
};

export const enc = encodeURIComponent;

export const link = (href: string, text: Child, attrs: Record<string, string> = {}) =>
  h("a", { href, ...attrs }, text);

export const runHref = (ref: string) => `#/run/${enc(ref || ".")}`;

export const trajHref = (ref: string, id: string) => `#/t/${enc(ref || ".")}/${enc(id)}`;

export const evalHref = (ref: string) => `#/eval/${enc(ref || ".")}`;

export const vsHref = (kind: CompareKind, a: string, b: string) =>
  `#/vs/${kind}/${enc(a || ".")}/${enc(b || ".")}`;

/** The eval's rollout run, whose trajectories are its trials. */
export const evalRunRef = (ref: string) => (ref ? `${ref}/run` : "run");

/** The eval a run belongs to (`<eval>/run`), as a breadcrumb; none for a plain run. */
export const evalCrumb = (runRef: string): [string, string][] => {
  if (runRef !== "run" && !runRef.endsWith("/run")) return [];
  const ref = runRef.slice(0, -"run".length).replace(/\/$/, "");
  return [[evalHref(ref), `eval ${ref || "."}`]];
};

export const refOf = (s: string) => (decodeURIComponent(s) === "." ? "" : decodeURIComponent(s));

export function layout(title: string, crumbs: [string, string][], ...body: Child[]): void {
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

/** A run's state as its row and page show it: `running` is the one that still changes. */
export const stateLabel = (s: RunState) =>
  s === "running" ? "running (live)" : s === "stopped" ? "stopped (--resume finishes it)" : s;

/** An outcome count (no reward): neutral colours by kind. */
export const outcomeBadge = (o: string, limit?: string) =>
  h("span", { class: `outcome o-${o.replace(/[^a-z_]/g, "")}` }, limit ? `${o} (${limit})` : o);

/** One trajectory's outcome with its reward: never a success colour when it did not pass. */
export const outcomeChip = (o: string, reward: number | null | undefined, limit?: string) => {
  const look = outcomeLook(o, reward, limit);
  return h("span", { class: `outcome tone-${look.tone}` }, look.label);
};

export const timingBar = (t: TrajectoryRow["timings"]) =>
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

export function table(
  caption: string,
  head: (string | HTMLElement)[],
  rows: HTMLTableRowElement[],
  cls = "",
) {
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

export const fact = (k: string, v: Child) => [h("dt", {}, k), h("dd", {}, v)];

export const legend = () =>
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
