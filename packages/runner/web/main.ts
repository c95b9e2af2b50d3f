import { h } from "./dom.js";
import { comparePage } from "./pages/compare.js";
import { evalFilePage, evalPage } from "./pages/eval.js";
import { runPage } from "./pages/run.js";
import { runsPage } from "./pages/runs.js";
import { tokensPage } from "./pages/tokens.js";
import { trajectoryPage } from "./pages/trajectory.js";
import { vsPage } from "./pages/vs.js";
import { app, layout, refOf, view } from "./shell.js";

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

async function route(): Promise<void> {
  const seq = ++view.renderSeq;
  clearTimeout(view.liveTimer);
  view.evalFrame = undefined;
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
  if (seq === view.renderSeq) app.setAttribute("data-ready", String(seq));
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

view.rerender = route;
window.addEventListener("hashchange", () => void route());
void route();
