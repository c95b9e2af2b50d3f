import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { EnvInstallRecord } from "./env-install.js";
import { SNAPSHOT_FORMAT } from "./key.js";
import type { SnapshotSpec } from "./spec.js";

/** What a built snapshot is: its `manifest.json` (schema, head, base commit) and the `Snapshot` handle over its cache dir. */

export const SnapshotStep = z
  .object({
    name: z.string().describe("step name: source, install, smoke"),
    command: z.string().optional().describe("the shell command, for install and smoke steps"),
    exitCode: z.number().int().describe("0 when the step succeeded"),
    durationMs: z.number().describe("how long the step took"),
  })
  .strict();

/** `manifest.json` of a built snapshot. */
export const SnapshotManifest = z
  .object({
    format: z.literal(SNAPSHOT_FORMAT).describe("snapshot layout version"),
    key: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .describe("content key (sha256 of the inputs)"),
    taskId: z.string().describe("task the snapshot was first built for"),
    repo: z.string().describe("repository identity used in the key"),
    commit: z.string().describe("the source commit the build started from (part of the key)"),
    baseCommit: z
      .string()
      .optional()
      .describe(
        "the commit the agent starts from and its diff is taken against: `commit` itself, or a child of it holding the files the install and smoke steps changed or added (absent in snapshots built before it existed: `commit`)",
      ),
    baseChanges: z
      .array(z.string())
      .optional()
      .describe(
        "the paths `baseCommit` changes against `commit` (the install's edits, e.g. SWE-bench's pre_install `sed -i`)",
      ),
    checkout: z
      .object({
        depth: z
          .enum(["base-only", "ancestry-and-tags"])
          .describe("the base commit alone, or its history and the tags pointing into it"),
        reason: z.string().describe("why (which file versions the package from git)"),
        tags: z.number().int().describe("how many tags were kept"),
      })
      .strict()
      .optional()
      .describe(
        "how a git source was checked out: nothing from after the base, verified (tasks/checkout.ts)",
      ),
    profile: z.string().describe("toolchain profile"),
    install: z.array(z.string()).describe("install commands that ran (the task's, or the profile's default)"),
    envInstall: EnvInstallRecord.optional().describe(
      "which install ran (the task's, the profile's default, or none), its network and the lock it followed",
    ),
    smoke: z.array(z.string()).describe("smoke commands that passed"),
    toolchain: z.array(z.string()).describe("toolchain identity (tool --version outputs)"),
    network: z
      .enum(["none", "required"])
      .describe("whether the build used the network (the source fetch or the install step; never smoke)"),
    steps: z.array(SnapshotStep).describe("every build step with its exit status and time"),
    buildMs: z.number().describe("total build time, ms"),
    createdAt: z.string().describe("ISO time the build finished"),
    flakegymVersion: z.string().describe("runner version that built it"),
    fromImage: z
      .object({
        ref: z.string().min(1).describe("the podman reference the tree was copied from"),
        digest: z.string().min(1).describe("podman's image id (sha256 of its config)"),
        deps: z
          .array(z.string())
          .optional()
          .describe(
            "dependency dirs of the source copied into the deps dir (a store snapshot's cargo-home: deps/cargo); absent: the image keeps its own",
          ),
      })
      .strict()
      .optional()
      .describe(
        "set when the tree is a snapshot image's /workspace or a store snapshot's work tree (from-image.ts): nothing was installed or built host-side; its dependencies are the image's own (no deps dir) unless `deps` names what was copied",
      ),
  })
  .strict();
export type SnapshotManifest = z.infer<typeof SnapshotManifest>;

/** A built snapshot in the cache. */
export interface Snapshot {
  readonly key: string;
  /** `<cache>/<key>`. */
  readonly dir: string;
  /** `<dir>/tree`: `workspace/` (the repository) and `deps/` (package caches). */
  readonly tree: string;
  readonly workspace: string;
  readonly manifest: SnapshotManifest;
  /** true when it was already in the cache. */
  readonly cached: boolean;
  readonly smokeLog: string;
}

export async function readManifest(dir: string): Promise<SnapshotManifest | undefined> {
  try {
    return SnapshotManifest.parse(JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")));
  } catch {
    return undefined;
  }
}

export function snapshotOf(dir: string, manifest: SnapshotManifest, cached: boolean): Snapshot {
  return {
    key: manifest.key,
    dir,
    tree: join(dir, "tree"),
    workspace: join(dir, "tree", "workspace"),
    manifest,
    cached,
    smokeLog: join(dir, "smoke.log"),
  };
}

/** What every snapshot manifest starts with: its key, the task's source and the diff base. Pure. */
export function manifestHead(
  spec: Pick<SnapshotSpec, "taskId" | "repo" | "commit" | "profile">,
  key: string,
  base: { commit: string; changed: readonly string[] },
): Pick<
  SnapshotManifest,
  "format" | "key" | "taskId" | "repo" | "commit" | "baseCommit" | "baseChanges" | "profile"
> {
  return {
    format: SNAPSHOT_FORMAT,
    key,
    taskId: spec.taskId,
    repo: spec.repo,
    commit: spec.commit,
    baseCommit: base.commit,
    baseChanges: [...base.changed],
    profile: spec.profile,
  };
}

/** The commit a snapshot's agent starts from and its diff is taken against. Pure. */
export function baseCommitOf(manifest: Pick<SnapshotManifest, "commit" | "baseCommit">): string {
  return manifest.baseCommit ?? manifest.commit;
}
