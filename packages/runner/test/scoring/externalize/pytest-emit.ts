import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { execa } from "execa";

/**
 * Writes `files` into `dir` and runs the host's pytest over its tests/ with the emission channel
 * (`FLAKEGYM_EMIT`) pointed at a file there: what a rewritten test file printed to the host, and
 * pytest's own result as written.
 */
export async function pytestEmitting(dir: string, files: Readonly<Record<string, string | Uint8Array>>) {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const emit = join(dir, "emit");
  const p = await execa("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
    cwd: dir,
    env: { FLAKEGYM_EMIT: emit, PYTHONPATH: dir },
    reject: false,
  });
  return { p, emitted: await readFile(emit, "utf8").catch(() => undefined) };
}
