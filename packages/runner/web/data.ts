import { queryRows, ROW_QUERY_DEFAULTS, type RowQuery, type SortKey } from "../src/view/query.js";
import type { RunResponse } from "../src/view/responses.js";

/**
 * Where the app's data comes from: the server's JSON API (token from the page URL), or, in an
 * exported file, the answers inlined at export time (the run table is then filtered, sorted and
 * paged here, by the same pure function the server uses).
 */
type Boot = { mode: "server" } | { mode: "export" };

const bootEl = document.getElementById("flakegym-boot");
export const boot: Boot = bootEl ? (JSON.parse(bootEl.textContent ?? "{}") as Boot) : { mode: "server" };

/** An export's inlined answers: one JSON script element each, parsed only when asked for. */
let exported: Map<string, HTMLScriptElement> | undefined;
function exportedValue(key: string): unknown {
  exported ??= new Map(
    [...document.querySelectorAll<HTMLScriptElement>("script.fg-data")].map((el) => [
      el.dataset.key ?? "",
      el,
    ]),
  );
  const el = exported.get(key);
  return el ? JSON.parse(el.textContent ?? "null") : undefined;
}
const token = new URLSearchParams(location.search).get("t") ?? "";

export class ApiError extends Error {}

export async function api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
  if (boot.mode === "export") return fromExport<T>(path, params);
  const qs = new URLSearchParams(params).toString();
  const res = await fetch(`${path}${qs ? `?${qs}` : ""}`, { headers: { "x-flakegym-token": token } });
  const body = (await res.json().catch(() => ({ error: `HTTP ${res.status}` }))) as { error?: string };
  if (!res.ok) throw new ApiError(body.error ?? `HTTP ${res.status}`);
  return body as T;
}

function fromExport<T>(path: string, params: Record<string, string>): T {
  if (boot.mode !== "export") throw new ApiError("not an export");
  const key = (p: Record<string, string>) => {
    const qs = Object.entries(p)
      .map(([k, v]) => `${k}=${v}`)
      .join("&");
    return qs ? `${path}?${qs}` : path;
  };
  if (path === "/api/run") {
    const { run, ...rest } = params;
    const full = exportedValue(key({ run: run ?? "" })) as RunResponse | undefined;
    if (!full) throw new ApiError(`this export does not hold run '${run}'`);
    const q = rowQuery(rest);
    const page = queryRows(full.rows, q);
    const onPage = new Set(page.rows.map((r) => r.task));
    const groups = full.groups.length <= q.size ? full.groups : full.groups.filter((g) => onPage.has(g.task));
    return { ...full, total: page.total, rows: page.rows, groups } as T;
  }
  if (path === "/api/stamp") return { stamp: "export" } as T;
  const v = exportedValue(key(params));
  if (v === undefined) throw new ApiError(`this export does not hold ${key(params)}`);
  return v as T;
}

/** The table query from URL params (the server parses the same with its RowQuery schema). */
function rowQuery(p: Record<string, string | undefined>): RowQuery {
  const num = (k: string) => (p[k] ? Number(p[k]) : undefined);
  const text = (k: string) => (p[k] ? p[k] : undefined);
  return {
    outcome: text("outcome"),
    task: text("task"),
    policy: text("policy"),
    minReward: num("minReward"),
    maxReward: num("maxReward"),
    sort: (text("sort") as SortKey | undefined) ?? ROW_QUERY_DEFAULTS.sort,
    dir: p.dir === "desc" ? "desc" : ROW_QUERY_DEFAULTS.dir,
    page: num("page") ?? ROW_QUERY_DEFAULTS.page,
    size: num("size") ?? ROW_QUERY_DEFAULTS.size,
  };
}

/** The URL of an eval's report.html for an iframe (server), or its inlined text (export). */
export function evalSource(ref: string): { src: string } | { srcdoc: string } {
  if (boot.mode === "export") {
    const html = exportedValue(`/eval?ref=${ref}`);
    return { srcdoc: typeof html === "string" ? html : "<p>not in this export</p>" };
  }
  return { src: `/eval?${new URLSearchParams({ ref, t: token })}` };
}
