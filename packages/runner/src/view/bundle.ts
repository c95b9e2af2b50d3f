import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { FlakegymError } from "../errors.js";

/**
 * The frontend (`packages/runner/web/`, TypeScript) bundled with esbuild in memory, once per
 * process, on first use: nothing to build after `npm ci`, and no stale bundle can be served (it is
 * always the source next to this file). Bundling takes ~0.1–0.3 s.
 */
export interface WebAssets {
  readonly js: string;
  readonly css: string;
}

const WEB_DIR = fileURLToPath(new URL("../../web/", import.meta.url));
let cached: Promise<WebAssets> | undefined;

export function webAssets(): Promise<WebAssets> {
  cached ??= bundle().catch((cause) => {
    cached = undefined;
    throw new FlakegymError("E_VIEW_BUNDLE", "the viewer's frontend did not bundle", {
      cause,
      hint: "check packages/runner/web/ for type or syntax errors (npx tsc -p packages/runner/web)",
    });
  });
  return cached;
}

async function bundle(): Promise<WebAssets> {
  const out = await build({
    entryPoints: [`${WEB_DIR}main.ts`],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2020",
    minify: true,
    legalComments: "none",
    logLevel: "silent",
  });
  const js = out.outputFiles[0]?.text ?? "";
  const css = await readFile(`${WEB_DIR}style.css`, "utf8");
  return { js, css };
}

/** Text safe inside a `<script>` element (no `</script>`, no HTML comment openers). Pure. */
export const scriptSafe = (s: string) =>
  s
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");

/** The page around its boot data: everything before it, and the app's script after it. */
export function pageFrame(assets: WebAssets, csp: string): { head: string; tail: string } {
  // the bundle is JS, not JSON: only `</script` could end its element early
  const js = assets.js.replace(/<\/(script)/gi, "<\\/$1");
  return {
    head: [
      "<!doctype html>",
      '<html lang="en"><head><meta charset="utf-8">',
      `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      '<meta name="referrer" content="no-referrer">',
      "<title>flakegym view</title>",
      `<style>${assets.css.replace(/<\//g, "<\\/")}</style></head>`,
      '<body><div id="app"></div>',
      "",
    ].join("\n"),
    tail: `\n<script>${js}</script>\n</body></html>`,
  };
}

/** A JSON script element (boot data, or one inlined API answer of an export). */
export function jsonScript(value: unknown, attrs: string): string {
  return `<script type="application/json" ${attrs}>${scriptSafe(JSON.stringify(value))}</script>`;
}

/** The page: the app, its CSS, and its boot data (`{mode:"server"}` for the server). */
export function pageHtml(assets: WebAssets, boot: unknown, csp: string): string {
  const { head, tail } = pageFrame(assets, csp);
  return `${head}${jsonScript(boot, 'id="flakegym-boot"')}${tail}`;
}
