import { lstat, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Redactor, runSecrets } from "../redact/redactor.js";
import { writeFileAtomic } from "./jsonl.js";

/**
 * Passes every regular file under `dir` through the redactor, rewriting (atomically) those that
 * held a secret: the boundary for files copied out of a worker (the Cline session, the worker's
 * outcome) that no flakegym writer wrote. Symbolic links and other special files are left as they
 * are and never followed. Returns the files rewritten, relative to `dir`.
 */
export async function redactTree(dir: string, redactor: Redactor = runSecrets): Promise<string[]> {
  const rewritten: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const abs = join(dir, rel);
    const st = await lstat(abs).catch(() => undefined);
    if (!st) return;
    if (st.isDirectory()) {
      for (const name of await readdir(abs)) await walk(rel ? join(rel, name) : name);
      return;
    }
    if (!st.isFile()) return;
    const before = await readFile(abs);
    const after = redactor.bytes(before);
    if (after === before) return;
    await writeFileAtomic(abs, after);
    rewritten.push(rel);
  };
  await walk("");
  return rewritten;
}
