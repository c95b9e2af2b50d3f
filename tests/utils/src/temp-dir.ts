import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A temp directory removed by `cleanup()`; use with `afterEach`/`afterAll` or `await using`. */
export interface TempDir {
  readonly path: string;
  cleanup(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export async function makeTempDir(prefix = "flakegym-test-"): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  const cleanup = () => rm(path, { recursive: true, force: true, maxRetries: 3 });
  return { path, cleanup, [Symbol.asyncDispose]: cleanup };
}
