import { createHash, randomBytes } from "node:crypto";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../errors.js";
import { acquireLock } from "../gc/lock.js";
import type { WorkerImageProvenance } from "../run-format/schema.js";
import { git } from "../tasks/materialize.js";
import { makeOwnerWritable } from "../tasks/owner-writable.js";
import { FLAKEGYM_VERSION } from "../version.js";
import type { BackendCapabilities } from "../workers/types.js";
import { commitBase } from "./build.js";
import { defaultSnapshotCacheDir } from "./key.js";
import { manifestHead, readManifest, type Snapshot, type SnapshotManifest, snapshotOf } from "./manifest.js";
import type { SnapshotSpec } from "./spec.js";

/**
 * A snapshot image used as what it is (podman, `--images nix`): the runner's snapshot of a task is
 * the image's own `/workspace` — the work tree with what the image's install commands built
 * (`target/`, `node_modules/`, `build/`) by the image's own toolchain — copied out once per image
 * into the snapshot cache. Each trajectory forks it as any snapshot (its quota, its diff against
 * the image's commit, scoring on the fork); nothing is installed or built host-side, and the
 * workers keep the image's dependency environment (`CARGO_HOME=/cargo-home`, `PYTHONPATH`): the
 * fork has no deps dir.
 */

/** Whether a task's snapshot comes from its worker image, and if not why. Pure. */
export type ImageSnapshotChoice =
  | { readonly use: true; readonly ref: string; readonly digest: string }
  | { readonly use: false; readonly reason: string };

/** The choice for a task on `backend` with worker image `image`. Pure. */
export function chooseImageSnapshot(
  image: WorkerImageProvenance,
  backend: { readonly kind: string; readonly capabilities: Pick<BackendCapabilities, "runsHostImages"> },
): ImageSnapshotChoice {
  if (!backend.capabilities.runsHostImages)
    return { use: false, reason: `backend ${backend.kind} (only podman forks an image's tree)` };
  if (image === "host /usr") return { use: false, reason: "no --images nix (workers run on host /usr)" };
  if (image.kind === "nix-store")
    return { use: false, reason: "workers run on the flake's store paths, not an image" };
  if (image.kind !== "snapshot") return { use: false, reason: `image ${image.ref} is a ${image.kind} image` };
  return { use: true, ref: image.ref, digest: image.digest };
}

/** The labels `nix/snapshot-image.nix` writes that must match the task's spec. */
const LABEL_TASK = "org.flakegym.task";
const LABEL_COMMIT = "org.flakegym.snapshot.commit";
const LABEL_PROFILE = "org.flakegym.snapshot.profile";

/**
 * What is wrong with a snapshot image's labels for `spec` (one line per label), or [] when it is
 * the snapshot image of that task at that commit and profile. Pure.
 */
export function imageLabelProblems(
  labels: Readonly<Record<string, string>>,
  spec: Pick<SnapshotSpec, "taskId" | "commit" | "profile">,
): string[] {
  const want: [string, string][] = [
    [LABEL_TASK, spec.taskId],
    [LABEL_COMMIT, spec.commit],
    [LABEL_PROFILE, spec.profile],
  ];
  return want
    .filter(([label, value]) => labels[label] !== value)
    .map(
      ([label, value]) =>
        `label ${label} is ${JSON.stringify(labels[label] ?? null)}, the task wants ${JSON.stringify(value)}`,
    );
}

/** The cache key of the snapshot copied from image `digest` (never a host build's key). Pure. */
export function imageSnapshotKey(digest: string): string {
  return createHash("sha256").update(`flakegym snapshot from image\0${digest}`).digest("hex");
}

/** The effects: an image's labels and a copy of its `/workspace`. */
export interface ImageTreeReader {
  labels(ref: string, signal?: AbortSignal): Promise<Record<string, string>>;
  /** Copies the image's `/workspace` to `dest` (which does not exist yet). */
  copyWorkspace(ref: string, dest: string, signal?: AbortSignal): Promise<void>;
  /**
   * Copies the source's dependency dirs into the snapshot's deps dir (a store snapshot's
   * cargo-home); returns the names of those copied. Absent: the image keeps its own.
   */
  copyDeps?(ref: string, deps: string, signal?: AbortSignal): Promise<string[]>;
  /** The copy as the manifest's source step names it (default: `podman cp <ref>:/workspace`). */
  copyCommand?(ref: string): string;
}

/**
 * Runs `cmd` with a bounded wait; throws E_SNAPSHOT_IMAGE naming the command, why it failed and
 * `hint`. The one exec of the image and store tree readers.
 */
export async function snapshotExec(
  cmd: string,
  args: readonly string[],
  o: { readonly timeoutMs: number; readonly hint: string; readonly signal?: AbortSignal | undefined },
): Promise<string> {
  const r = await execa(cmd, args, {
    reject: false,
    stdin: "ignore",
    timeout: o.timeoutMs,
    ...(o.signal ? { cancelSignal: o.signal } : {}),
  });
  if (r.exitCode !== 0) {
    const why = r.timedOut ? `timed out after ${o.timeoutMs} ms` : `exit ${r.exitCode}`;
    throw new FlakegymError(
      "E_SNAPSHOT_IMAGE",
      `${cmd} ${args.join(" ")} failed (${why}): ${r.stderr.trim()}`,
      {
        hint: o.hint,
      },
    );
  }
  return r.stdout;
}

/** Runs podman with a bounded wait; throws naming the command and podman's error. */
const podman = (args: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<string> =>
  snapshotExec("podman", args, {
    timeoutMs,
    signal,
    hint: "check the image with `podman image inspect`; `flakegym images load --task <id>` reloads it",
  });

/** The real reader: `podman image inspect`, then `podman create` + `podman cp` of /workspace. */
export function podmanImageTreeReader(timeoutMs = 10 * 60_000): ImageTreeReader {
  return {
    async labels(ref, signal) {
      const out = await podman(["image", "inspect", "--format", "{{json .Labels}}", ref], timeoutMs, signal);
      return (JSON.parse(out.trim() || "null") ?? {}) as Record<string, string>;
    },
    async copyWorkspace(ref, dest, signal) {
      const name = `flakegym-snapimg-${randomBytes(4).toString("hex")}`;
      await podman(["create", "--name", name, "--network", "none", ref, "true"], timeoutMs, signal);
      try {
        await podman(["cp", `${name}:/workspace`, dest], timeoutMs, signal);
      } finally {
        await execa("podman", ["rm", "-f", name], { reject: false, stdin: "ignore", timeout: 60_000 });
      }
    },
  };
}

/** A reader over a host directory standing in for the image's /workspace (orchestrator tests). */
export function dummyImageTreeReader(o: {
  labels: Record<string, string>;
  workspace: string;
}): ImageTreeReader & { copies: number } {
  const reader = {
    copies: 0,
    labels: async () => ({ ...o.labels }),
    async copyWorkspace(_ref: string, dest: string) {
      reader.copies++;
      // `cp -a` keeps owners and modes, as `podman cp` keeps the layer's
      await execa("cp", ["-a", o.workspace, dest], { stdin: "ignore", timeout: 10 * 60_000 });
    },
  };
  return reader;
}

/**
 * The snapshot of `spec` taken from image `choice` (cached per image digest; concurrent callers
 * copy once, under the cache's lock). Throws E_SNAPSHOT_IMAGE when the image is not that task's
 * snapshot image (its labels say which) or its tree has no commit.
 */
export async function snapshotFromImage(
  spec: SnapshotSpec,
  choice: { readonly ref: string; readonly digest: string },
  reader: ImageTreeReader,
  opts: { cacheDir?: string; signal?: AbortSignal } = {},
): Promise<Snapshot> {
  const cacheDir = opts.cacheDir ?? defaultSnapshotCacheDir();
  const key = imageSnapshotKey(choice.digest);
  const final = join(cacheDir, key);
  const found = await readManifest(final);
  if (found) return snapshotOf(final, found, true);
  await mkdir(join(cacheDir, "tmp"), { recursive: true });
  const release = await acquireLock(join(cacheDir, "locks", key), opts.signal ? { signal: opts.signal } : {});
  try {
    const again = await readManifest(final);
    if (again) return snapshotOf(final, again, true);
    return await copyInto(spec, choice, reader, { cacheDir, key, signal: opts.signal });
  } finally {
    await release();
  }
}

async function copyInto(
  spec: SnapshotSpec,
  choice: { readonly ref: string; readonly digest: string },
  reader: ImageTreeReader,
  o: { cacheDir: string; key: string; signal: AbortSignal | undefined },
): Promise<Snapshot> {
  const started = performance.now();
  const problems = imageLabelProblems(await reader.labels(choice.ref, o.signal), spec);
  if (problems.length) {
    throw new FlakegymError(
      "E_SNAPSHOT_IMAGE",
      `image ${choice.ref} is not the snapshot image of task ${spec.taskId}: ${problems.join("; ")}`,
      { hint: `rebuild and reload it: flakegym images load --task ${spec.taskId}` },
    );
  }
  const tmp = join(
    o.cacheDir,
    "tmp",
    `${o.key.slice(0, 16)}-${process.pid}-${randomBytes(4).toString("hex")}`,
  );
  try {
    // empty unless the source has dependency dirs to copy: an image keeps its own
    const depsDir = join(tmp, "tree", "deps");
    await mkdir(depsDir, { recursive: true });
    const workspace = join(tmp, "tree", "workspace");
    await reader.copyWorkspace(choice.ref, workspace, o.signal);
    await ownTree(workspace, o.signal);
    const deps = reader.copyDeps ? await reader.copyDeps(choice.ref, depsDir, o.signal) : [];
    if (deps.length) await ownTree(depsDir, o.signal);
    const copyMs = performance.now() - started;
    // what the image's build made (target/, node_modules/) is committed on top of the image's
    // commit, as a host build's outputs are (commitBase): the agent's diff includes ignored files
    const base = await commitBase(workspace, await imageCommit(workspace, choice.ref, o.signal), o.signal);
    const manifest = imageManifestOf(spec, choice, {
      key: o.key,
      base,
      copyMs,
      deps,
      ...(reader.copyCommand ? { copyCommand: reader.copyCommand(choice.ref) } : {}),
    });
    return await publishCopy(tmp, o.cacheDir, manifest, choice);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Makes the copied tree the runner's own, as a host build's tree is: the image's layer may carry
 * its builder's uids (and a worker runs as the workspace's owner, with no capability to write
 * another user's files, nor a read-only one). `chown -R -P` and `chmod -R` follow no symlink.
 */
async function ownTree(dir: string, signal: AbortSignal | undefined): Promise<void> {
  const owner = `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`;
  const r = await execa("chown", ["-R", "-P", owner, dir], {
    reject: false,
    stdin: "ignore",
    timeout: 10 * 60_000,
    ...(signal ? { cancelSignal: signal } : {}),
  });
  if (r.exitCode !== 0) {
    throw new FlakegymError(
      "E_SNAPSHOT_IMAGE",
      `chown -R -P ${owner} of the copied image tree failed: ${r.stderr.trim()}`,
      {
        hint: "the runner must own the snapshot it forks: run it as the user that owns the snapshot cache",
      },
    );
  }
  // and writable by that owner: a store-built tree's files are read-only (0444, 0555)
  await makeOwnerWritable(dir, signal);
}

/** The commit the image's work tree is at (nix/snapshot-workspace.nix commits the built tree). */
async function imageCommit(workspace: string, ref: string, signal: AbortSignal | undefined): Promise<string> {
  try {
    const out = await git(["--git-dir", join(workspace, ".git"), "rev-parse", "--verify", "HEAD^{commit}"], {
      cwd: workspace,
      timeoutMs: 60_000,
      ...(signal ? { signal } : {}),
    });
    return out.trim();
  } catch (err) {
    throw new FlakegymError(
      "E_SNAPSHOT_IMAGE",
      `image ${ref}: /workspace has no git commit to diff against`,
      {
        cause: err,
        hint: "a snapshot image's /workspace is a git work tree (nix/snapshot-workspace.nix); rebuild the image",
      },
    );
  }
}

/** The manifest of a snapshot copied from an image: no install, no smoke host-side. Pure. */
export function imageManifestOf(
  spec: SnapshotSpec,
  choice: { readonly ref: string; readonly digest: string },
  b: {
    key: string;
    base: { commit: string; changed: readonly string[] };
    copyMs: number;
    now?: Date;
    copyCommand?: string;
    /** dependency dirs copied into the deps dir (ImageTreeReader.copyDeps) */
    deps?: readonly string[];
  },
): SnapshotManifest {
  return {
    ...manifestHead(spec, b.key, b.base),
    install: [],
    smoke: [],
    toolchain: [`image ${choice.digest}`],
    network: "none",
    steps: [
      {
        name: "source",
        command: b.copyCommand ?? `podman cp ${choice.ref}:/workspace`,
        exitCode: 0,
        durationMs: Math.round(b.copyMs),
      },
    ],
    buildMs: Math.round(b.copyMs),
    createdAt: (b.now ?? new Date()).toISOString(),
    flakegymVersion: FLAKEGYM_VERSION,
    fromImage: {
      ref: choice.ref,
      digest: choice.digest,
      ...(b.deps?.length ? { deps: [...b.deps] } : {}),
    },
  };
}

async function publishCopy(
  tmp: string,
  cacheDir: string,
  manifest: SnapshotManifest,
  choice: { readonly ref: string; readonly digest: string },
): Promise<Snapshot> {
  await writeFile(
    join(tmp, "build.log"),
    `== source: image ${choice.ref} (${choice.digest}): /workspace copied; no install command ran host-side\n`,
  );
  await writeFile(join(tmp, "smoke.log"), "");
  await writeFile(join(tmp, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const final = join(cacheDir, manifest.key);
  await rename(tmp, final);
  return snapshotOf(final, manifest, false);
}
