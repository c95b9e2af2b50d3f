import { SEGMENT } from "../../src/view/segment.js";
import { api, evalSource } from "../data.js";
import { h } from "../dom.js";
import { evalHref, evalRunRef, layout, link, runHref, trajHref, view } from "../shell.js";

/** `#/eval/<ref>`: an eval's report.html embedded, and its summary.md and report.json. */

/** The frame of the eval report on screen, whose messages open trials and files. */

export async function evalPage(ref: string): Promise<void> {
  const src = evalSource(ref);
  const frame = h("iframe", {
    title: `eval report ${ref || "."}`,
    sandbox: "allow-scripts",
    class: "report",
  });
  if ("src" in src) frame.src = src.src;
  else frame.srcdoc = src.srcdoc;
  view.evalFrame = { frame, ref };
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
  const cur = view.evalFrame;
  if (!cur || e.source !== cur.frame.contentWindow) return;
  const msg = e.data as { flakegym?: unknown; trajectory?: unknown; name?: unknown } | null;
  if (msg?.flakegym === "open" && typeof msg.trajectory === "string" && SEGMENT.test(msg.trajectory))
    location.hash = `${trajHref(evalRunRef(cur.ref), msg.trajectory)}?at=tests`;
  else if (msg?.flakegym === "file" && (msg.name === "summary.md" || msg.name === "report.json"))
    location.hash = `${evalHref(cur.ref)}/file/${msg.name}`;
});

export async function evalFilePage(ref: string, name: string): Promise<void> {
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
