// The one rule for where flakegym keeps caches. Plain JavaScript (with cache-root.d.mts for
// TypeScript) because bin/compiled-bundle.mjs needs it before any TypeScript can run.
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * `$FLAKEGYM_CACHE`, else `$XDG_CACHE_HOME/flakegym`, else `~/.cache/flakegym`. Pure but for the
 * home dir's default.
 * @param {Record<string, string | undefined>} env
 * @param {string} [home]
 * @returns {string}
 */
export function flakegymCacheRoot(env, home = homedir()) {
  if (env.FLAKEGYM_CACHE) return env.FLAKEGYM_CACHE;
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg && xdg.length > 0 ? xdg : join(home, ".cache"), "flakegym");
}
