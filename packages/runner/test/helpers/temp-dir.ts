import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A fresh directory under the OS temp dir, removed by `cleanup()` or `await using`. The runner's own
 * tests take it from here, not from @flakegym/test-utils (a package the runner must not depend on:
 * its tests also run alone, as the Nix check does).
 */
export async function tempDir(
  prefix: string,
): Promise<{ path: string; cleanup: () => Promise<void>; [Symbol.asyncDispose]: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  const cleanup = () => rm(path, { recursive: true, force: true, maxRetries: 3 });
  return { path, cleanup, [Symbol.asyncDispose]: cleanup };
}
