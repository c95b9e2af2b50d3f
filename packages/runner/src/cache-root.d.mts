/** `$FLAKEGYM_CACHE`, else `$XDG_CACHE_HOME/flakegym`, else `~/.cache/flakegym`. */
export declare function flakegymCacheRoot(env: Record<string, string | undefined>, home?: string): string;
