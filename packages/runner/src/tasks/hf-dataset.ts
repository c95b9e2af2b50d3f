import { readdir, readFile, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { join, relative, resolve } from "node:path";
import { execa } from "execa";
import { UsageError } from "../errors.js";

/**
 * `--dataset hf:<org>/<name>[@revision][:split]`: a Hugging Face dataset read from the hub's local
 * cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
 * `~/.cache/huggingface/hub`), in the hub's own layout: `datasets--<org>--<name>/refs/<revision>`
 * holds a commit, `snapshots/<commit>/` the files. On a cache miss the hub's own CLI (`hf`, from
 * `huggingface_hub`) downloads it when it is on PATH; flakegym itself never talks to the hub.
 */

/** A parsed `hf:` reference. */
export interface HfRef {
  readonly repo: string;
  readonly revision: string;
  readonly split: string | undefined;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Parses `hf:<org>/<name>[@revision][:split]`; undefined when `value` is not an `hf:` ref. Pure. */
export function parseHfRef(value: string): HfRef | undefined {
  if (!value.startsWith("hf:")) return undefined;
  const m = /^hf:([^/@:]+)\/([^/@:]+)(?:@([^:]+))?(?::([^:]+))?$/.exec(value);
  if (!m || !NAME.test(m[1] ?? "") || !NAME.test(m[2] ?? "") || (m[3] !== undefined && /\.\./.test(m[3])))
    throw new UsageError(
      `--dataset ${value}: not a Hugging Face dataset reference`,
      "write hf:<org>/<name>, optionally @<revision> (branch, tag or commit) and :<split>, e.g. hf:princeton-nlp/SWE-bench_Verified:test",
      "E_DATASET",
    );
  return { repo: `${m[1]}/${m[2]}`, revision: m[3] ?? "main", split: m[4] };
}

/** The hub cache directory the environment names (the hub library's own precedence). Pure. */
export function hubCacheDir(env: Readonly<Record<string, string | undefined>>, home = homedir()): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, "hub");
  return join(env.XDG_CACHE_HOME || join(home, ".cache"), "huggingface", "hub");
}

/** A dataset's folder in the hub cache. Pure. */
export const repoFolder = (repo: string) => `datasets--${repo.replace("/", "--")}`;

/** The split a data file holds, by the hub's naming (`<split>-00000-of-00001.parquet`, `<split>/…`). Pure. */
export function splitOfFile(rel: string): string | undefined {
  const parts = rel.split("/");
  const base = parts.at(-1) ?? "";
  const named = /^([A-Za-z0-9_.]+?)(?:-\d{5}-of-\d{5})?\.(parquet|jsonl)$/.exec(base)?.[1];
  if (named && !/^\d+$/.test(named)) return named;
  return parts.length >= 2 ? parts.at(-2) : undefined;
}

/**
 * The one data file of `split` among a snapshot's files (relative paths), or why there is none. Pure.
 */
export function pickSplitFile(
  files: readonly string[],
  split: string | undefined,
): { file: string } | { problem: string } {
  const data = files.filter((f) => /\.(parquet|jsonl)$/.test(f));
  const splits = [...new Set(data.map(splitOfFile).filter((s): s is string => s !== undefined))].sort();
  if (data.length === 0) return { problem: "its snapshot holds no .parquet or .jsonl file" };
  const want = split ?? (splits.length === 1 ? splits[0] : undefined);
  if (want === undefined) return { problem: `it has several splits (${splits.join(", ")}): add :<split>` };
  const shards = data.filter((f) => splitOfFile(f) === want).sort();
  if (shards.length === 0) return { problem: `no split '${want}' (it has ${splits.join(", ") || "none"})` };
  if (shards.length > 1)
    return {
      problem: `split '${want}' is ${shards.length} shards (${shards.join(", ")}); pass one shard's path as --dataset`,
    };
  return { file: shards[0] as string };
}

async function filesUnder(dir: string, root = dir, out: string[] = []): Promise<string[]> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    // the hub's snapshot entries are symlinks into blobs/: follow files, never directories
    if (e.isDirectory()) await filesUnder(p, root, out);
    else if (e.isFile() || (e.isSymbolicLink() && (await stat(p).catch(() => undefined))?.isFile()))
      out.push(relative(root, p));
  }
  return out;
}

/** The snapshot dir of a revision in the cache (a commit, or a ref file naming one); undefined: absent. */
async function snapshotDir(cache: string, ref: HfRef): Promise<string | undefined> {
  const folder = join(cache, repoFolder(ref.repo));
  const commit = /^[0-9a-f]{40}$/.test(ref.revision)
    ? ref.revision
    : (await readFile(join(folder, "refs", ref.revision), "utf8").catch(() => "")).trim();
  if (!/^[0-9a-f]{40}$/.test(commit)) return undefined;
  const dir = join(folder, "snapshots", commit);
  return (await stat(dir).catch(() => undefined))?.isDirectory() ? dir : undefined;
}

/** Whether an executable `name` is on PATH. */
async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  for (const dir of (env.PATH ?? "").split(":").filter(Boolean))
    if ((await stat(join(dir, name)).catch(() => undefined))?.isFile()) return true;
  return false;
}

/** Downloads a dataset into the cache with the hub's own CLI; returns why it could not. */
async function download(
  ref: HfRef,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (!(await onPath("hf", env))) return "the hub's CLI `hf` is not on PATH to download it";
  const args = ["download", ref.repo, "--repo-type", "dataset", "--revision", ref.revision];
  const r = await execa("hf", args, {
    env,
    reject: false,
    timeout: 30 * 60_000,
    stdin: "ignore",
    stdout: "ignore",
    ...(signal ? { cancelSignal: signal } : {}),
  });
  if (r.exitCode === 0) return undefined;
  const last = String(r.stderr ?? "")
    .trim()
    .split("\n")
    .at(-1);
  return r.timedOut
    ? "`hf download` took over 30 minutes"
    : `\`hf download\` failed: ${last || `exit ${r.exitCode}`}`;
}

/**
 * The local file a `--dataset` value names: a path (resolved against `cwd`), or an `hf:` reference
 * resolved through the hub cache (downloaded by `hf` when missing and on PATH).
 */
export async function datasetPathOf(
  value: string,
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
  signal?: AbortSignal,
): Promise<string> {
  const ref = parseHfRef(value);
  if (!ref) return resolve(cwd, value);
  const cache = hubCacheDir(env);
  let dir = await snapshotDir(cache, ref);
  let fetchProblem: string | undefined;
  if (!dir) {
    fetchProblem = await download(ref, env, signal);
    dir = await snapshotDir(cache, ref);
  }
  if (!dir)
    throw new UsageError(
      `--dataset ${value}: revision '${ref.revision}' of ${ref.repo} is not in the Hugging Face cache ${join(cache, repoFolder(ref.repo))}${fetchProblem ? ` (${fetchProblem})` : ""}`,
      `download it first (\`hf download ${ref.repo} --repo-type dataset --revision ${ref.revision}\`, from huggingface_hub), or set HF_HOME / HF_HUB_CACHE to the cache that holds it`,
      "E_DATASET",
    );
  const pick = pickSplitFile(await filesUnder(dir), ref.split);
  if ("problem" in pick)
    throw new UsageError(`--dataset ${value}: ${pick.problem}`, `its files are under ${dir}`, "E_DATASET");
  return join(dir, pick.file);
}

/** Command options with `--dataset` made a local path (an `hf:` reference resolved); others unchanged. */
export async function withDatasetPath<T extends { readonly dataset?: string | undefined }>(
  opts: T,
  ctx: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly signal?: AbortSignal },
): Promise<T> {
  if (opts.dataset === undefined || parseHfRef(opts.dataset) === undefined) return opts;
  return { ...opts, dataset: await datasetPathOf(opts.dataset, ctx.cwd, ctx.env, ctx.signal) };
}
