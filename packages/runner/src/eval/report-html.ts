import { outcomeLook } from "./outcome-look.js";
import type { EvalReport, TrialRow } from "./report.js";

/**
 * `report.html`: ONE self-contained page rendered on the server from report.json — inline CSS,
 * inline SVG charts, one small inline script (table filter), no network (a CSP forbids any load).
 * Links to trial files are relative to the eval directory, so the page works opened as a file and
 * served (or embedded by `flakegym view`) from a local server. Every function here is pure.
 */

/** HTML-escapes text for element content and quoted attributes. */
export function esc(s: string): string {
  return s
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/** A relative link target: each path segment percent-encoded. */
export function href(rel: string): string {
  return rel.split("/").map(encodeURIComponent).join("/");
}

const pct = (x: number | null | undefined) =>
  x === null || x === undefined ? "–" : `${Math.round(x * 100)}%`;
const fmt = (x: number, d = 2) => (Number.isInteger(x) ? String(x) : x.toFixed(d));

/** Red (0) → amber → green (1); grey without data. */
export function heatColor(p: number | null): string {
  if (p === null) return "#d0d0d0";
  const hue = Math.round(120 * Math.max(0, Math.min(1, p)));
  return `hsl(${hue}, 65%, 55%)`;
}

/**
 * Fixed colours of the built-in policies: the reference solution blue, the no-op grey. Neither is
 * red or green, which mean fail and pass beside them.
 */
export const POLICY_COLORS: Readonly<Record<string, string>> = {
  gold: "hsl(215, 60%, 45%)",
  empty: "hsl(0, 0%, 55%)",
};

/** Hues a model's colour is drawn from: blues, purples, magentas and ambers, never red or green. */
const MODEL_HUES = [195, 230, 255, 275, 295, 315, 40, 55] as const;

/**
 * A policy's colour: fixed for `gold` and `empty`; for a model or a scripted plan, a hue from
 * MODEL_HUES chosen by a hash of its spec (the same policy has the same colour in every report). Pure.
 */
export function policyColor(spec: string): string {
  const fixed = POLICY_COLORS[spec];
  if (fixed) return fixed;
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < spec.length; i++) h = Math.imul(h ^ spec.charCodeAt(i), 0x01000193) >>> 0;
  const hue = MODEL_HUES[h % MODEL_HUES.length];
  return `hsl(${hue}, ${55 + ((h >>> 9) % 15)}%, ${40 + ((h >>> 17) % 10)}%)`;
}
const color = (r: EvalReport, i: number) => policyColor(r.policies[i]?.policy ?? String(i));

/**
 * The trial a cell opens: its first failed trial (the one to read), else its first trial. Pure.
 */
export function cellTarget(r: EvalReport, item: string, policy: string): TrialRow | undefined {
  const ts = r.trials.filter((t) => t.item === item && t.policy === policy);
  return ts.find((t) => !t.passed && t.reward !== null) ?? ts.find((t) => !t.passed) ?? ts[0];
}

/**
 * A link to a trial: opened as a file it goes to the trial's log; inside `flakegym view` (the
 * report runs in a frame) the page script sends the trajectory id up and the viewer opens the
 * trial's own page (transcript, diff, score, tests).
 */
function trialLink(t: TrialRow, text: string, title = ""): string {
  return `<a href="${href(t.links.log)}" data-open="${esc(t.trajectoryId)}"${title ? ` title="${esc(title)}"` : ""}>${text}</a>`;
}

/** An outcome chip that does not read as success when the trial did not pass. */
export function outcomeChip(t: Pick<TrialRow, "outcome" | "limit" | "reward">): string {
  const look = outcomeLook(t.outcome, t.reward, t.limit);
  return `<span class="chip ${look.tone}">${esc(look.label)}</span>`;
}

/** Items × policies, each cell coloured by pass@1 and labelled with its status and c/n. */
export function heatMapSvg(r: EvalReport): string {
  const cw = 150;
  const ch = 34;
  const left = 190;
  const top = 30;
  const w = left + cw * r.policies.length + 10;
  const h = top + ch * r.items.length + 10;
  const parts: string[] = [];
  r.policies.forEach((p, j) => {
    parts.push(
      `<text x="${left + j * cw + cw / 2}" y="${top - 10}" text-anchor="middle" class="lbl">${esc(p.label)}</text>`,
    );
  });
  r.items.forEach((item, i) => {
    const y = top + i * ch;
    parts.push(
      `<text x="${left - 8}" y="${y + ch / 2 + 4}" text-anchor="end" class="lbl">${esc(item.id)}</text>`,
    );
    r.policies.forEach((p, j) => {
      const c = r.cells.find((x) => x.item === item.id && x.policy === p.policy);
      const x = left + j * cw;
      const pass1 = c?.stats.pass1 ?? null;
      const title = c
        ? `${item.id} × ${p.policy}: ${c.stats.status} ${c.stats.c}/${c.stats.n}, pass@1 ${pct(pass1)} (95% CI ${pct(c.stats.wilson95.low)}–${pct(c.stats.wilson95.high)})`
        : "";
      const target = cellTarget(r, item.id, p.policy);
      const g =
        `<g class="cell" data-status="${esc(c?.stats.status ?? "NO_DATA")}"><title>${esc(title)}</title>` +
        `<rect x="${x + 1}" y="${y + 1}" width="${cw - 2}" height="${ch - 2}" rx="3" fill="${heatColor(pass1)}"/>` +
        `<text x="${x + cw / 2}" y="${y + ch / 2 + 4}" text-anchor="middle" class="cv">${esc(c ? `${c.stats.status} ${c.stats.c}/${c.stats.n}` : "–")}</text></g>`;
      parts.push(
        target
          ? `<a href="${href(target.links.log)}" data-open="${esc(target.trajectoryId)}" aria-label="${esc(`open trial ${target.trial} of ${item.id} × ${p.label}`)}">${g}</a>`
          : g,
      );
    });
  });
  return `<svg class="chart heatmap" role="img" aria-label="pass rate heat map" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}">${parts.join("")}</svg>`;
}

interface Series {
  readonly name: string;
  readonly color: string;
  readonly dashed?: boolean;
  readonly points: readonly (readonly [number, number])[];
}

/** A small line chart, y in [0, 1]. */
export function lineChartSvg(cls: string, label: string, xLabel: string, series: readonly Series[]): string {
  const W = 460;
  const H = 240;
  const L = 44;
  const B = 36;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const xMax = Math.max(1, ...xs);
  const X = (x: number) => L + ((x - 1) / Math.max(1, xMax - 1)) * (W - L - 16);
  const Y = (y: number) => H - B - y * (H - B - 12);
  const parts: string[] = [];
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line x1="${L}" x2="${W - 16}" y1="${Y(t)}" y2="${Y(t)}" class="grid"/>`);
    parts.push(`<text x="${L - 6}" y="${Y(t) + 4}" text-anchor="end" class="tick">${t}</text>`);
  }
  for (let k = 1; k <= xMax; k++) {
    parts.push(`<text x="${X(k)}" y="${H - B + 16}" text-anchor="middle" class="tick">${k}</text>`);
  }
  parts.push(`<text x="${(W + L) / 2}" y="${H - 4}" text-anchor="middle" class="tick">${esc(xLabel)}</text>`);
  for (const s of series) {
    if (s.points.length === 0) continue;
    const d = s.points.map((p, i) => `${i ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(" ");
    parts.push(
      `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 4"' : ""}><title>${esc(s.name)}</title></path>`,
    );
    for (const p of s.points) {
      parts.push(
        `<circle cx="${X(p[0]).toFixed(1)}" cy="${Y(p[1]).toFixed(1)}" r="3" fill="${s.color}"><title>${esc(`${s.name}: k=${p[0]} → ${fmt(p[1], 3)}`)}</title></circle>`,
      );
    }
  }
  return `<svg class="chart ${cls}" role="img" aria-label="${esc(label)}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${parts.join("")}</svg>`;
}

/** Pooled unbiased pass@k (solid) and pass^k (dashed) per policy. */
export function passKSvg(r: EvalReport): string {
  const series: Series[] = r.policies.flatMap((p, i) => [
    {
      name: `${p.label} pass@k`,
      color: color(r, i),
      points: p.pooled.passAtK.map((x) => [x.k, x.passAtK] as const),
    },
    {
      name: `${p.label} pass^k`,
      color: color(r, i),
      dashed: true,
      points: p.pooled.passAtK.map((x) => [x.k, x.passHatK] as const),
    },
  ]);
  return lineChartSvg("passk-chart", "pass@k and pass^k curves", "k (solid: pass@k, dashed: pass^k)", series);
}

/** Grouped bars: one group per bin, one bar per policy. */
export function barChartSvg(
  colors: readonly string[],
  cls: string,
  label: string,
  bins: readonly string[],
  values: readonly (readonly number[])[],
  names: readonly string[],
): string {
  const W = 460;
  const H = 240;
  const L = 44;
  const B = 36;
  const max = Math.max(1, ...values.flat());
  const gw = (W - L - 16) / Math.max(1, bins.length);
  const bw = Math.max(2, (gw - 6) / Math.max(1, values.length));
  const Y = (y: number) => H - B - (y / max) * (H - B - 12);
  const parts: string[] = [];
  for (const t of [0, 0.5, 1]) {
    parts.push(`<line x1="${L}" x2="${W - 16}" y1="${Y(t * max)}" y2="${Y(t * max)}" class="grid"/>`);
    parts.push(
      `<text x="${L - 6}" y="${Y(t * max) + 4}" text-anchor="end" class="tick">${fmt(t * max, 1)}</text>`,
    );
  }
  bins.forEach((b, i) => {
    parts.push(
      `<text x="${L + i * gw + gw / 2}" y="${H - B + 16}" text-anchor="middle" class="tick">${esc(b)}</text>`,
    );
    values.forEach((vs, j) => {
      const v = vs[i] ?? 0;
      const x = L + i * gw + 3 + j * bw;
      parts.push(
        `<rect class="bar" x="${x.toFixed(1)}" y="${Y(v).toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${(H - B - Y(v)).toFixed(1)}" fill="${colors[j] ?? "#888"}"><title>${esc(`${names[j]} ${b}: ${fmt(v)}`)}</title></rect>`,
      );
    });
  });
  return `<svg class="chart ${cls}" role="img" aria-label="${esc(label)}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${parts.join("")}</svg>`;
}

const trialsOf = (r: EvalReport, policy: string) => r.trials.filter((t) => t.policy === policy);
const totalMs = (t: TrialRow) => t.phases.forkMs + t.phases.bootMs + t.phases.agentMs + t.phases.scoreMs;

/** Histogram of rewards (5 bins over [0, 1]) per policy. */
export function rewardSvg(r: EvalReport): string {
  const bins = ["0–.2", ".2–.4", ".4–.6", ".6–.8", ".8–1"];
  const values = r.policies.map((p) => {
    const h = [0, 0, 0, 0, 0];
    for (const t of trialsOf(r, p.policy)) if (t.reward !== null) h[Math.min(4, Math.floor(t.reward * 5))]!++;
    return h;
  });
  return barChartSvg(
    r.policies.map((p) => policyColor(p.policy)),
    "reward-chart",
    "reward distribution",
    bins,
    values,
    r.policies.map((p) => p.label),
  );
}

/** Histogram of trial durations (fork + boot + agent + score) per policy, 6 equal bins. */
export function durationSvg(r: EvalReport): string {
  const all = r.trials.map(totalMs);
  const max = Math.max(1, ...all);
  const n = 6;
  const bins = Array.from({ length: n }, (_, i) => `${((i * max) / n / 1000).toFixed(0)}s`);
  const values = r.policies.map((p) => {
    const h = new Array<number>(n).fill(0);
    for (const t of trialsOf(r, p.policy)) h[Math.min(n - 1, Math.floor((totalMs(t) / max) * n))]!++;
    return h;
  });
  return barChartSvg(
    r.policies.map((p) => policyColor(p.policy)),
    "duration-chart",
    "trial duration distribution",
    bins,
    values,
    r.policies.map((p) => p.label),
  );
}

/** Tokens in and out per policy (thousands). */
export function tokensSvg(r: EvalReport): string {
  const values = r.policies.map((p) => [p.tokensIn / 1000, p.tokensOut / 1000]);
  return barChartSvg(
    r.policies.map((p) => policyColor(p.policy)),
    "tokens-chart",
    "token use",
    ["tokens in (k)", "tokens out (k)"],
    values,
    r.policies.map((p) => p.label),
  );
}

function legend(r: EvalReport): string {
  return `<p class="legend">${r.policies
    .map(
      (p, i) =>
        `<span><i style="background:${color(r, i)}"></i>${esc(p.label)} = <code>${esc(p.policy)}</code></span>`,
    )
    .join(" ")}</p>`;
}

function policiesTable(r: EvalReport): string {
  const rows = r.policies.map((p) => {
    const s = p.pooled.statuses;
    return `<tr><td>${esc(p.label)}</td><td>${pct(p.pooled.pass1)}</td><td>${pct(p.pooled.wilson95.low)}–${pct(p.pooled.wilson95.high)}</td><td>${s.PASS ?? 0} / ${s.FLAKY ?? 0} / ${s.FAIL ?? 0}</td><td>${p.meanReward === null ? "–" : fmt(p.meanReward)}</td><td>${p.tokensIn} / ${p.tokensOut}</td><td>${p.modelCalls}</td><td>${p.toolCalls}</td><td>${fmt(p.phasesMs.agentMs / 1000, 1)} s / ${fmt(p.phasesMs.scoreMs / 1000, 1)} s</td><td>${p.cost === undefined ? "–" : fmt(p.cost, 4)}</td></tr>`;
  });
  return `<table class="policies"><thead><tr><th>policy</th><th>pass@1</th><th>95% CI (Wilson)</th><th>PASS / FLAKY / FAIL</th><th>mean reward</th><th>tokens in / out</th><th>model calls</th><th>tool calls</th><th>agent / scoring time</th><th>cost</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function cellsTable(r: EvalReport): string {
  const labels = new Map(r.policies.map((p) => [p.policy, p.label]));
  const rows = r.cells.map((c) => {
    const k = c.stats.k
      .map(
        (x) =>
          `${x.k}: ${pct(x.passAtK)} / ${pct(x.passHatK)} <small>(plug-in ${pct(x.pluginPassAtK)} / ${pct(x.pluginPassHatK)})</small>`,
      )
      .join("<br>");
    const target = cellTarget(r, c.item, c.policy);
    const item = target ? trialLink(target, esc(c.item), `open trial ${target.trial}`) : esc(c.item);
    return `<tr class="st-${esc(c.stats.status)}"><td>${item}</td><td>${esc(labels.get(c.policy) ?? c.policy)}</td><td><span class="chip st">${esc(c.stats.status)}</span></td><td>${c.stats.c}/${c.stats.n}${c.infraErrors ? ` (+${c.infraErrors} infra)` : ""}</td><td>${pct(c.stats.wilson95.low)}–${pct(c.stats.wilson95.high)}</td><td>${k}</td></tr>`;
  });
  return `<table class="cells"><thead><tr><th>item</th><th>policy</th><th>status</th><th>passed</th><th>95% CI</th><th>k: unbiased pass@k / pass^k</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function trialsTable(r: EvalReport): string {
  const labels = new Map(r.policies.map((p) => [p.policy, p.label]));
  const rows = r.trials.map((t) => {
    const links = [
      `<a href="${href(t.links.log)}">log</a>`,
      `<a href="${href(t.links.diff)}">diff</a>`,
      `<a href="${href(t.links.dir)}/">files</a>`,
      ...(t.links.workspace ? [`<a href="${href(t.links.workspace)}/">workspace</a>`] : []),
    ].join(" · ");
    return `<tr class="trial ${t.passed ? "pass" : "fail"}" id="trial-${esc(t.trajectoryId)}"><td>${trialLink(t, esc(t.item), "open this trial")}</td><td>${esc(labels.get(t.policy) ?? t.policy)}</td><td>${t.trial}</td><td>${outcomeChip(t)}</td><td>${t.reward === null ? "–" : fmt(t.reward)}</td><td>${t.passed ? "yes" : "no"}</td><td class="why">${whyCell(t)}</td><td>${t.turns}</td><td>${fmt(totalMs(t) / 1000, 1)} s</td><td>${links}</td></tr>`;
  });
  return `<input id="filter" type="search" placeholder="filter trials (item, policy, outcome…)"><table class="trials"><thead><tr><th>item</th><th>policy</th><th>trial</th><th>outcome</th><th>reward</th><th>passed</th><th>why it failed</th><th>model calls</th><th>duration</th><th>files</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

/** The first failed hidden test and its message (the rest counted), or the outcome's detail. */
export function whyCell(t: TrialRow): string {
  if (t.passed) return "";
  const f = t.failures ?? [];
  const failed = Object.entries(t.checks).filter(([, s]) => s !== "passed");
  const first = f[0];
  if (first)
    return `<b>${esc(first.test)}</b>: <code>${esc(first.message)}</code>${f.length > 1 ? ` <small>+${f.length - 1} more</small>` : ""}`;
  if (failed.length) return `${failed.length} failed: ${esc(failed.map(([n]) => n).join(", "))}`;
  return `<small>${esc(t.detail)}</small>`;
}

function flakesTable(r: EvalReport): string {
  const flaky = r.testFlakes.filter((t) => t.flaky > 0);
  if (!flaky.length) return "<p>No hidden test flipped between repeated runs on the same diff.</p>";
  const rows = flaky.map(
    (t) => `<tr><td>${esc(t.item)}</td><td>${esc(t.test)}</td><td>${t.flaky}/${t.scorings}</td></tr>`,
  );
  return `<table><thead><tr><th>item</th><th>test</th><th>flipped / scorings</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function baselineSection(r: EvalReport): string {
  const b = r.baseline;
  if (!b) return "";
  const rows = b.comparisons.map(
    (c) =>
      `<tr class="${c.regressed ? "regressed" : ""}"><td>${esc(c.scope)}</td><td>${c.baseline.c}/${c.baseline.n}</td><td>${c.current.c}/${c.current.n}</td><td>${c.z === null ? "–" : fmt(c.z)}</td><td>${c.regressed ? "REGRESSED" : "no"}</td></tr>`,
  );
  return `<h2>Baseline</h2><p>${esc(b.file)} — ${esc(b.test)}: ${b.regressions.length ? `<strong>${b.regressions.length} regression(s)</strong>` : "no regression"}</p><table><thead><tr><th>scope</th><th>baseline</th><th>now</th><th>z</th><th>regressed</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.chart{display:block;margin:8px 0}.charts{display:flex;flex-wrap:wrap;gap:16px}
.lbl{font-size:12px}.cv{font-size:12px;font-weight:600}.tick{font-size:10px;fill:#555}.grid{stroke:#eee}
tr.fail td{background:#fff5f5}tr.regressed td{background:#ffe0e0}.legend span{margin-right:14px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}#filter{margin:8px 0;padding:4px;width:320px}
small{color:#777}code{font-size:12px}.chip{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px}
.chip.ok{background:#d8f3dc;color:#1b5e20}.chip.partial{background:#fff1c2;color:#7a5a00}.chip.bad{background:#fde2e1;color:#8a1c1c}.chip.infra{background:#eee;color:#555}
tr.st-PASS .chip.st{background:#d8f3dc;color:#1b5e20}tr.st-FLAKY .chip.st{background:#fff1c2;color:#7a5a00}tr.st-FAIL .chip.st{background:#fde2e1;color:#8a1c1c}
td.why code{white-space:pre-wrap;color:#8a1c1c}.heatmap a{cursor:pointer}`;

/**
 * The table filter, and, when the report runs inside `flakegym view` (a frame), trial and file
 * links handed up to the viewer as messages (the frame itself can reach nothing).
 */
const SCRIPT = `document.getElementById("filter").addEventListener("input",function(e){var q=e.target.value.toLowerCase();
document.querySelectorAll("table.trials tbody tr").forEach(function(tr){tr.style.display=tr.textContent.toLowerCase().indexOf(q)<0?"none":"";});});
if(window.parent!==window)document.addEventListener("click",function(e){var a=e.target.closest&&e.target.closest("a[data-open],a[data-file],a[href]");if(!a)return;e.preventDefault();
var open=a.getAttribute("data-open"),file=a.getAttribute("data-file");if(!open){var tr=a.closest("tr.trial");if(tr){var o=tr.querySelector("a[data-open]");open=o&&o.getAttribute("data-open");}}
if(open)window.parent.postMessage({flakegym:"open",trajectory:open},"*");else if(file)window.parent.postMessage({flakegym:"file",name:file},"*");});`;

/** The whole page. */
export function renderReportHtml(r: EvalReport): string {
  const p = r.provenance;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>flakegym eval ${esc(r.evalId)}</title><style>${STYLE}</style></head>
<body>
<h1>flakegym eval ${esc(r.evalId)}</h1>
<p>${r.items.length} item(s) × ${r.policies.length} policy(ies) × ${p.trials} trial(s) · ${esc(r.createdAt)} · ${fmt(r.durationMs / 1000, 1)} s${r.complete ? "" : " · <strong>interrupted: incomplete</strong>"}<br>
cline ${esc(p.cline.version)} · flakegym ${esc(p.flakegymVersion)} · node ${esc(p.node)} · backend ${esc(p.backend)} · seed ${p.seed} · test repeat ${p.testRepeat} · concurrency ${p.concurrency} · <a href="report.json" data-file="report.json">report.json</a> · <a href="summary.md" data-file="summary.md">summary.md</a></p>
${legend(r)}
<h2>Policies</h2>${policiesTable(r)}
<h2>Pass rate (pass@1) per item and policy</h2>${heatMapSvg(r)}
<div class="charts"><div><h2>pass@k / pass^k (unbiased, mean over items)</h2>${passKSvg(r)}</div>
<div><h2>Rewards</h2>${rewardSvg(r)}</div><div><h2>Trial durations</h2>${durationSvg(r)}</div><div><h2>Token use</h2>${tokensSvg(r)}</div></div>
${baselineSection(r)}
<h2>Items × policies</h2>${cellsTable(r)}
<h2>Flaky hidden tests (the environment, not the agent)</h2>${flakesTable(r)}
<h2>Trials</h2>${trialsTable(r)}
<script>${SCRIPT}</script>
</body></html>
`;
}
