/** Types of compiled-bundle.mjs (plain JavaScript: it runs before any TypeScript loader). */
export interface BundleSpec {
  readonly name: string;
  readonly entry: string;
  readonly format: string;
}
export declare const VIEW_BUNDLE: BundleSpec;
export declare const CLI_BUNDLE: BundleSpec;
export declare const viewCacheDir: (env: Record<string, string | undefined>) => string;
export declare function cliCacheDir(): string;
export declare function unsafeCacheDir(
  st: { uid: number; mode: number; isDirectory(): boolean },
  uid: number,
): string | undefined;
export declare function bundleKey(
  inputs: readonly { path: string; sha256: string }[],
  format?: string,
): string;
type Main = (argv: readonly string[]) => Promise<number>;
export declare function compiledViewMain(env: Record<string, string | undefined>): Promise<Main | undefined>;
export declare function compiledCliMain(env: Record<string, string | undefined>): Promise<Main | undefined>;
export declare function compiledCliMainHelp(
  env: Record<string, string | undefined>,
): Promise<string | undefined>;
