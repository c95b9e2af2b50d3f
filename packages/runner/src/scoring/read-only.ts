import { randomBytes, randomInt } from "node:crypto";
import { chown, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { git } from "../tasks/materialize.js";
import type { WorkerSpec } from "../workers/types.js";
import { type AppliedFiles, AppliedPatchMemo, appliedPatchKey, type BaseFile } from "./applied-patch-memo.js";
import type { DecoyPlan, GuardReport } from "./decoys/guard.js";
import { guardHidden } from "./decoys/guard-hidden.js";
import { idsTwinFiles, twinFiles } from "./decoys/twin.js";
import type { ExternalSite } from "./externalize/canon.js";
import { type CanaryInstance, newCanary } from "./results.js";
import { type InstalledFile, regularFile } from "./snapshot-files.js";

export type { InstalledFile } from "./snapshot-files.js";

import { readUidMap, uidMapped } from "../workers/local/uid-map.js";
import type { BackendCapabilities } from "../workers/types.js";
import type { HiddenTests } from "./scorer.js";

/**
 * Hidden test files owned by another user, read-only (issue 11 §2). On backends that bind host
 * files into the sandbox (local bubblewrap, podman) the hidden test files are computed on the host
 * from trusted inputs only — the task's tests dir, or its tests patch applied to the snapshot's
 * versions of those files, with the run's canary added — written owned by `nobody` (65534), mode
 * 0444, and bound read-only at their workspace paths (`WorkerSpec.readOnlyFiles`). Code under
 * test then cannot chmod, write, unlink or rename them (EROFS / EBUSY). The scoring script sees
 * them already installed (not its own, same content) and leaves them as they are. Nomad workers
 * get nothing bound: the script installs them itself (chmod + checksum, as before).
 */

/** The user that owns the bound hidden test files on the host: nobody, unmapped in every sandbox. */
export const HIDDEN_OWNER_UID = 65534;

/** Hidden tests bound read-only into a scoring worker: what scoreDiff must install and check. */
export interface BoundHidden {
  /** The files as bound (the canary, if any, already in): the script verifies rather than writes them. */
  readonly files: readonly InstalledFile[];
  /** The canary the files carry (suite tasks). */
  readonly canary?: CanaryInstance;
  /** How graded tests are named in this run and which tests are decoys (suite tasks). */
  readonly decoys?: DecoyPlan;
  /** Which graded tests have decoys, and why the others have none. */
  readonly guard?: GuardReport;
  /** The externalized assertions' expected values, kept on the host (scoring/externalize). */
  readonly external?: readonly ExternalSite[];
  /** The files are bound read-only by the backend (else the script installs them). */
  readonly readOnly: boolean;
}

/** `content` with the canary added when `path` is its file. Pure. */
const withCanary = (path: string, content: Buffer, canary: CanaryInstance | undefined): Buffer =>
  canary && canary.file === path
    ? Buffer.concat([Buffer.from(canary.prepend), content, Buffer.from(canary.append)])
    : content;

/**
 * The hidden test files as the script would install them, computed on the host: the tests dir's
 * files, or the tests patch applied (`git apply` in a private temp repo) to the snapshot's versions
 * of the files it touches, the canary added. Undefined when they cannot all be bound as regular
 * files (the patch deletes one, the snapshot has a symlink there, the canary's file is not one):
 * the script then installs them itself. A patch applied once to the same bytes is not applied
 * again in this process (applied-patch-memo.ts: keyed by the patch and the files' bytes).
 */
export async function installedHiddenFiles(
  hidden: HiddenTests,
  snapshotWorkspace: string,
  canary: CanaryInstance | undefined,
  signal?: AbortSignal,
  scratch: string = tmpdir(),
): Promise<InstalledFile[] | undefined> {
  const install = hidden.install;
  if (install === undefined) return undefined;
  if (canary && !hidden.testFiles.includes(canary.file)) return undefined;
  if (install.kind === "files") {
    return install.files.map((f) => ({
      path: f.path,
      content: withCanary(f.path, f.content, canary),
      executable: false,
    }));
  }
  const bases: [string, BaseFile][] = [];
  for (const path of hidden.testFiles) {
    const base = await regularFile(snapshotWorkspace, path);
    if (base === null) return undefined;
    bases.push([path, base]);
  }
  const key = appliedPatchKey(install.patch, bases);
  let applied = APPLIED.get(key);
  if (applied === undefined) {
    applied = await applyPatch(install.patch, bases, signal, scratch);
    APPLIED.set(key, applied);
  }
  // copies: no caller's change to a buffer reaches the memo
  return applied?.map((f) => ({ ...f, content: withCanary(f.path, Buffer.from(f.content), canary) }));
}

/** Patches applied in this process, by their inputs (applied-patch-memo.ts). */
const APPLIED = new AppliedPatchMemo();

/** `patch` applied (`git apply` in a private temp repo) to the base files; null: not all regular files after. */
async function applyPatch(
  patch: string,
  bases: readonly (readonly [string, BaseFile])[],
  signal: AbortSignal | undefined,
  scratch: string,
): Promise<AppliedFiles> {
  const tmp = await mkdtemp(join(scratch, "flakegym-hidden-apply-"));
  try {
    const tree = join(tmp, "tree");
    await mkdir(tree);
    for (const [path, base] of bases) {
      if (base === undefined) continue;
      await mkdir(dirname(join(tree, path)), { recursive: true });
      await writeFile(join(tree, path), base.content, { mode: base.executable ? 0o755 : 0o644 });
    }
    await writeFile(join(tmp, "tests.patch"), patch);
    const opts = { cwd: tree, ...(signal ? { signal } : {}) };
    await git(["init", "-q"], opts);
    await git(["apply", "--whitespace=nowarn", join(tmp, "tests.patch")], opts);
    const out: InstalledFile[] = [];
    for (const [path] of bases) {
      const f = await regularFile(tree, path);
      if (!f) return null;
      out.push({ path, content: f.content, executable: f.executable });
    }
    return out;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Host files to bind, in a directory removed by `release()`. */
export interface ReadOnlyFiles {
  readonly files: NonNullable<WorkerSpec["readOnlyFiles"]>;
  release(): Promise<void>;
}

/**
 * Writes `files` into a fresh host directory, owned by {@link HIDDEN_OWNER_UID}, mode 0444 (0555
 * when executable). Needs root on the host ({@link canOwnForOthers}; the local and podman
 * backends run as root).
 */
export async function writeReadOnlyFiles(
  files: readonly InstalledFile[],
  scratch: string = tmpdir(),
): Promise<ReadOnlyFiles> {
  const dir = await mkdtemp(join(scratch, "flakegym-hidden-"));
  const release = () => rm(dir, { recursive: true, force: true });
  try {
    const out = [];
    for (const [i, f] of files.entries()) {
      const hostPath = join(dir, String(i));
      await writeFile(hostPath, f.content, { mode: f.executable ? 0o555 : 0o444, flag: "wx" });
      await chown(hostPath, HIDDEN_OWNER_UID, HIDDEN_OWNER_UID);
      out.push({ hostPath, path: f.path });
    }
    return { files: out, release };
  } catch (err) {
    await release();
    throw err;
  }
}

/**
 * Whether this host can give hidden test files to another user: root (chown) in a user namespace
 * where that user ({@link HIDDEN_OWNER_UID}) exists. Otherwise the scoring script installs them.
 */
export const canOwnForOthers = (): boolean =>
  process.getuid?.() === 0 && uidMapped(readUidMap(), HIDDEN_OWNER_UID);

/** One scoring run's hidden files: what the script verifies, and the host files bound read-only. */
export interface PreparedHidden {
  readonly bound: BoundHidden;
  readonly readOnly?: ReadOnlyFiles;
}

/** Whether the task's verdict is one eval command's (no per-test results to twin). Pure. */
export const isEvalCmdTask = (hidden: HiddenTests): boolean =>
  hidden.commands.some((c) => c.kind === "eval_cmd");

/** Whether the task runs one command per graded id (kind `ids`: jest, vitest, mocha rows). Pure. */
export const isIdsTask = (hidden: HiddenTests): boolean =>
  hidden.suite === undefined && hidden.commands.some((c) => c.kind !== "eval_cmd");

/**
 * The decoy twin of a task whose verdicts come from commands (eval_cmd: one verdict; ids: one per
 * graded id), or undefined for a suite task (its decoys sit beside each test instead). Pure, given `rand`.
 */
export function commandTwin<F extends InstalledFile>(
  hidden: HiddenTests,
  files: readonly F[],
  rand: (n: number) => number,
): { files: F[]; sites: number; report: GuardReport } | undefined {
  if (isEvalCmdTask(hidden)) return twinFiles(files, rand);
  if (isIdsTask(hidden))
    return idsTwinFiles(
      files,
      hidden.commands.map((c) => c.id),
      rand,
    );
  return undefined;
}

/** What the scoring backend declares about hidden files (workers/types.ts BackendCapabilities). */
export type HiddenPlace = Pick<BackendCapabilities, "bindsHiddenReadOnly" | "hostHasSnapshotTree">;

/** `files` as one run's bound hidden files: bound read-only where the backend and user allow. */
async function bindHidden(
  caps: HiddenPlace,
  common: Omit<BoundHidden, "readOnly">,
  scratch: string,
): Promise<PreparedHidden> {
  if (!caps.bindsHiddenReadOnly || !canOwnForOthers()) return { bound: { ...common, readOnly: false } };
  const readOnly = await writeReadOnlyFiles(common.files, scratch);
  return { bound: { ...common, readOnly: true }, readOnly };
}

/**
 * The hidden test files of one scoring run, computed on the host from trusted inputs: installed,
 * guarded by decoys (suite tasks, scoring/decoys), the canary added; bound read-only where the
 * backend binds them (`bindsHiddenReadOnly`: local, podman) and we are root, else installed by the
 * script (Nomad, not root). An
 * eval_cmd or per-id task also gets its decoy `twin` (scoring/decoys/twin.ts: every assertion's
 * expected literal changed), scored in a second fresh sandbox where it must fail — every guarded
 * id, for a per-id task (scoring/twin-run.ts); none when no assertion can change (reported
 * unguarded). Undefined when the files cannot be computed as regular files: the script then
 * installs the tests itself.
 */
export async function prepareReadOnlyHidden(
  caps: HiddenPlace,
  hidden: HiddenTests,
  snapshotWorkspace: string,
  signal?: AbortSignal,
  /** Where the temporary files go: the run's owned scratch dir, so a killed run's are swept. */
  scratch: string = tmpdir(),
  /**
   * `externalize: false`: decoys only, as before issue 42 (a red-team and bench baseline);
   * `probeDecoys`: `validate`'s gold run, one decoy at every site (decoys/site-key.ts).
   */
  opts: { readonly externalize?: boolean; readonly prompt?: string; readonly probeDecoys?: boolean } = {},
): Promise<(PreparedHidden & { twin?: PreparedHidden }) | undefined> {
  const canary = hidden.suite ? newCanary(hidden.suite.canary, randomBytes(6).toString("hex")) : undefined;
  const plain = await installedHiddenFiles(hidden, snapshotWorkspace, undefined, signal, scratch).catch(
    (err: unknown) => {
      // the host may hold no snapshot work tree (Nomad); the script installs the tests itself
      if (!caps.hostHasSnapshotTree) return undefined;
      throw err;
    },
  );
  if (!plain || (canary && !plain.some((f) => f.path === canary.file))) return undefined;
  const twin = commandTwin(hidden, plain, (n) => randomInt(n));
  if (twin) {
    const real = await bindHidden(caps, { files: plain, guard: twin.report }, scratch);
    if (!twin.sites) return real;
    try {
      return { ...real, twin: await bindHidden(caps, { files: twin.files, guard: twin.report }, scratch) };
    } catch (err) {
      await real.readOnly?.release();
      throw err;
    }
  }
  const guarded = hidden.suite
    ? await guardHidden(
        hidden.suite,
        plain,
        snapshotWorkspace,
        undefined,
        signal,
        opts.externalize ?? true,
        opts.prompt,
        opts.probeDecoys ?? false,
      )
    : undefined;
  const files = (guarded?.files ?? plain).map((f) => ({
    ...f,
    content: withCanary(f.path, f.content, canary),
  }));
  return await bindHidden(
    caps,
    {
      files,
      ...(canary ? { canary } : {}),
      ...(guarded ? { decoys: guarded.plan, guard: guarded.report } : {}),
      ...(guarded?.external.length ? { external: guarded.external } : {}),
    },
    scratch,
  );
}
