import { type PointResult, perTrajectory } from "./judge.js";

/**
 * The scale bench's plot: runner CPU and memory per trajectory against concurrency (log x), as a
 * self-contained SVG for the report dir. Pure.
 */

export interface Series {
  readonly title: string;
  readonly unit: string;
  readonly points: readonly { readonly n: number; readonly y: number }[];
}

/** The plotted series: CPU ms/traj, RSS MiB/traj, and the runner's whole RSS. Pure. */
export function plotSeries(points: readonly PointResult[]): Series[] {
  const sorted = [...points].sort((a, b) => a.n - b.n);
  return [
    {
      title: "runner CPU per trajectory",
      unit: "ms",
      points: sorted.map((p) => ({ n: p.n, y: perTrajectory(p).cpuMs })),
    },
    {
      title: "runner RSS per trajectory",
      unit: "MiB",
      points: sorted.map((p) => ({ n: p.n, y: perTrajectory(p).rssMb })),
    },
    { title: "runner RSS peak", unit: "MiB", points: sorted.map((p) => ({ n: p.n, y: p.rssPeakMb })) },
  ];
}

/** Where `n` sits on a log axis from `lo` to `hi`, 0..1. Pure. */
export function logPosition(n: number, lo: number, hi: number): number {
  if (hi <= lo) return 0.5;
  return (Math.log10(n) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo));
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");

function panel(s: Series, x0: number, w: number, h: number): string {
  const ns = s.points.map((p) => p.n);
  const [lo, hi] = [Math.min(...ns), Math.max(...ns)];
  const yMax = Math.max(...s.points.map((p) => p.y), 1e-9) * 1.15;
  const px = (n: number) => x0 + 40 + logPosition(n, lo, hi) * (w - 60);
  const py = (y: number) => 30 + (1 - y / yMax) * (h - 60);
  const line = s.points.map((p) => `${px(p.n).toFixed(1)},${py(p.y).toFixed(1)}`).join(" ");
  const dots = s.points
    .map(
      (p) =>
        `<circle cx="${px(p.n).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3"/>` +
        `<text x="${px(p.n).toFixed(1)}" y="${(py(p.y) - 6).toFixed(1)}" text-anchor="middle">${p.y.toPrecision(3)}</text>` +
        `<text x="${px(p.n).toFixed(1)}" y="${h - 12}" text-anchor="middle">${p.n}</text>`,
    )
    .join("");
  return (
    `<g font-family="sans-serif" font-size="11"><text x="${x0 + 40}" y="16" font-weight="bold">${esc(s.title)} (${esc(s.unit)}) vs concurrent trajectories</text>` +
    `<line x1="${x0 + 40}" y1="${h - 30}" x2="${x0 + w - 20}" y2="${h - 30}" stroke="#999"/>` +
    `<polyline fill="none" stroke="#2a6fdb" stroke-width="2" points="${line}"/>${dots}</g>`
  );
}

/** The SVG of every series side by side. Pure. */
export function plotSvg(series: readonly Series[]): string {
  const w = 360;
  const h = 260;
  const body = series.map((s, i) => panel(s, i * w, w, h)).join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w * series.length}" height="${h}">${body}</svg>\n`;
}
