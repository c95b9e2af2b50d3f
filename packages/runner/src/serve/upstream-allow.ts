/**
 * Which inference endpoints a trainer may point `serve` at. The URL comes from the request, so
 * without a bound it is a way to make this machine call anything it can reach (other services, the
 * cloud's metadata endpoint); the operator names the endpoints (`serve --allow-upstream <url>`),
 * and the server's own model API keys never go with a trainer's URL. Pure.
 */

/** Environment names of model API keys the policy upstreams read (policy/create-upstream.ts). */
export const MODEL_KEY_ENV = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"] as const;

const normPath = (p: string) => p.replace(/\/+$/, "");

/** Why `baseUrl` is not one the operator allowed (undefined when it falls under one of `allowed`). */
export function upstreamProblem(baseUrl: string, allowed: readonly string[]): string | undefined {
  if (allowed.length === 0) {
    return "this server accepts no trainer inference endpoint: its operator must name the allowed ones with --allow-upstream <url>";
  }
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    return `'${baseUrl}' is not a URL`;
  }
  if (u.username || u.password) return "the URL carries credentials; send none in it";
  const fits = allowed.some((a) => {
    const w = new URL(a);
    if (w.protocol !== u.protocol || w.host !== u.host) return false;
    const base = normPath(w.pathname);
    const path = normPath(u.pathname);
    return path === base || path.startsWith(`${base}/`);
  });
  return fits
    ? undefined
    : `'${baseUrl}' is not under any endpoint this server allows (${allowed.join(", ")})`;
}

/** Checks the operator's `--allow-upstream` values; throws naming the bad one. */
export function checkAllowedUpstreams(allowed: readonly string[]): void {
  for (const a of allowed) {
    let u: URL | undefined;
    try {
      u = new URL(a);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== "http:" && u.protocol !== "https:")) {
      throw new TypeError(`--allow-upstream '${a}' is not an http(s) URL (e.g. http://10.0.0.7:8000/v1)`);
    }
  }
}

/** `env` without the model API keys: what a group's rollout reads its upstream keys from. */
export function withoutModelKeys(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of MODEL_KEY_ENV) delete out[k];
  return out;
}
