/** Types of compiled-view.mjs (plain JavaScript: it runs before any TypeScript loader). */
export declare const viewCacheDir: (env: Record<string, string | undefined>) => string;
export declare function unsafeCacheDir(
  st: { uid: number; mode: number; isDirectory(): boolean },
  uid: number,
): string | undefined;
export declare function bundleKey(inputs: readonly { path: string; sha256: string }[]): string;
export declare function compiledViewMain(
  env: Record<string, string | undefined>,
): Promise<((argv: readonly string[]) => Promise<number>) | undefined>;
