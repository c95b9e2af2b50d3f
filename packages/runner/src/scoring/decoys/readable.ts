import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { regularFile } from "../snapshot-files.js";

/**
 * What the agent can read besides the hidden test files, for choosing decoy values
 * (decoys/context.ts): the prompt, then the pristine snapshot's text files (sources, docs), so a
 * decoy value is written there as often as the real one — a prompt that states
 * `format(5400000)` returns `"1h30m"` otherwise tells the real copy from its decoys (red-team
 * oracle, tests/integration/scoring/red-team/oracle-pick.ts). Bounded: the prompt whole, then
 * files in path order up to {@link MAX_READABLE_BYTES} (the index counts every character pair).
 * Walked once per snapshot.
 */

const SKIP = new Set([".git", "node_modules", "target", "build", "dist", "vendor", "__pycache__", ".venv"]);
const MAX_FILE_BYTES = 256 * 1024;
export const MAX_READABLE_BYTES = 1024 * 1024;
const MAX_FILES = 5_000;

async function walk(root: string, rel: string, out: string[]): Promise<void> {
  if (out.length >= MAX_FILES) return;
  const entries = await readdir(join(root, rel), { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory() && !SKIP.has(e.name)) await walk(root, path, out);
    else if (e.isFile()) out.push(path);
  }
}

const remembered = new Map<string, Promise<string[]>>();
const MAX_REMEMBERED = 16;

/** The snapshot's text files (not `hidden`), bounded as the module note says. */
async function snapshotTexts(workspace: string, hidden: ReadonlySet<string>): Promise<string[]> {
  const paths: string[] = [];
  await walk(workspace, "", paths);
  const out: string[] = [];
  let bytes = 0;
  for (const p of paths) {
    if (hidden.has(p)) continue;
    const f = await regularFile(workspace, p);
    if (!f || f.content.length > MAX_FILE_BYTES || f.content.includes(0)) continue;
    if (bytes + f.content.length > MAX_READABLE_BYTES) break;
    bytes += f.content.length;
    out.push(f.content.toString("utf8"));
  }
  return out;
}

/** The prompt and the snapshot's readable text (see the module note). */
export async function readableTexts(
  workspace: string,
  hiddenPaths: readonly string[],
  prompt: string | undefined,
): Promise<string[]> {
  const key = `${workspace}\0${[...hiddenPaths].sort().join("\0")}`;
  let hit = remembered.get(key);
  if (!hit) {
    if (remembered.size >= MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
    hit = snapshotTexts(workspace, new Set(hiddenPaths));
    remembered.set(key, hit);
  }
  return [...(prompt ? [prompt] : []), ...(await hit)];
}
