import { mkdir, readdir } from "node:fs/promises";
import { FlakegymError, UsageError } from "../errors.js";
import { type RunPaths, readManifest } from "../run-format/run-dir.js";
import type { RunConfig, RunManifest } from "../run-format/schema.js";
import { FLAKEGYM_VERSION } from "../version.js";
import type { RolloutDeps } from "./deps.js";
import { runningNixpkgs, runningStorePath } from "./provenance.js";
import { isLockFile } from "./run-lock.js";
import { checkSeal, sealOf } from "./run-seal.js";

/** A run's run.json: what a new run records, what a resumed one keeps, and its groups' provenance. */

/**
 * A resumed run's manifest: the stored one, with this session's concurrency, retry budget and
 * (`--resume --atropos <url>`) a new run-api; the CLI keeps the stored Atropos otherwise. Pure.
 */
export function resumedManifest(stored: RunManifest, config: RunConfig): RunManifest {
  return {
    ...stored,
    config: {
      ...stored.config,
      concurrency: config.concurrency,
      maxInfraRetries: config.maxInfraRetries,
      ...(config.atropos ? { atropos: config.atropos } : {}),
    },
  };
}

/** A new run's manifest. Pure. */
export function newManifest(o: {
  readonly runId: string;
  readonly createdAt: string;
  readonly config: RunConfig;
  readonly provenance: Awaited<ReturnType<RolloutDeps["provenance"]>>;
  readonly nodeVersion: string;
  readonly nixStorePath: string | undefined;
  readonly nixpkgs?: "standin" | undefined;
  readonly inputs?: Record<string, string> | undefined;
}): RunManifest {
  const m: RunManifest = {
    version: 1,
    runId: o.runId,
    createdAt: o.createdAt,
    config: o.config,
    provenance: {
      flakegymVersion: FLAKEGYM_VERSION,
      cline: o.provenance.cline,
      node: o.nodeVersion,
      ...(o.nixStorePath ? { nixStorePath: o.nixStorePath } : {}),
      ...(o.nixpkgs ? { nixpkgs: o.nixpkgs } : {}),
      ...(o.provenance.imageDigest ? { imageDigest: o.provenance.imageDigest } : {}),
    },
    tasks: Object.fromEntries(o.config.tasks.map((t) => [t, {}])),
    ...(o.inputs ? { inputs: o.inputs } : {}),
  };
  return { ...m, seal: sealOf(m) };
}

/** The provenance each group record of task `taskId` carries. Pure. */
export function groupProvenanceOf(manifest: RunManifest, taskId: string) {
  const prov = manifest.provenance;
  return {
    ...manifest.tasks[taskId],
    run_id: manifest.runId,
    flakegym_version: prov.flakegymVersion,
    cline_version: prov.cline.version,
    ...(prov.cline.integrity ? { cline_integrity: prov.cline.integrity } : {}),
    ...(prov.nixStorePath ? { nix_store_path: prov.nixStorePath } : {}),
    ...(prov.imageDigest ? { image_digest: prov.imageDigest } : {}),
    seed: manifest.config.seed,
    policies: manifest.config.policies,
  };
}

/** Creates the run directory; `--out` naming a file (or a path through one) is a usage error. */
async function ensureOutDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ENOTDIR") {
      throw new UsageError(
        `the output directory ${dir} cannot be created: it (or one of its parents) is a file`,
        "pass --out <dir> naming a new or empty directory",
      );
    }
    throw err;
  }
}

/**
 * The manifest of the run in `p`: the stored one when resuming, else a new one for a new (empty)
 * run directory, with the provenance `deps` reports.
 */
export async function openManifest(
  p: RunPaths,
  o: {
    readonly resume: boolean;
    readonly config: RunConfig;
    readonly runId: string;
    readonly deps: RolloutDeps;
    readonly inputs?: Record<string, string> | undefined;
  },
): Promise<RunManifest> {
  if (o.resume) {
    const stored = await readManifest(p);
    checkSeal(p.manifest, stored);
    return resumedManifest(stored, o.config);
  }
  await ensureOutDir(p.dir);
  const existing = (await readdir(p.dir)).filter((n) => !isLockFile(n));
  if (existing.length > 0) {
    throw new FlakegymError("E_OUT_EXISTS", `the output directory ${p.dir} is not empty`, {
      hint: `continue that run with --resume ${p.dir}, or pick another --out`,
    });
  }
  const provenance = await o.deps.provenance();
  const storePath = runningStorePath();
  return newManifest({
    runId: o.runId,
    createdAt: new Date().toISOString(),
    config: o.config,
    provenance,
    nodeVersion: process.version,
    nixStorePath: storePath,
    nixpkgs: runningNixpkgs(storePath),
    inputs: o.inputs,
  });
}
