import { join } from "node:path";
import { z } from "zod";
import { flakegymCacheRoot } from "../cache-root.mjs";
import { UsageError } from "../errors.js";
import type { FlakeFacts } from "../nix/flake-facts.js";

/**
 * Which flake images `flakegym images` builds, and whether this machine can build them. Pure: the
 * effects (nix build, podman load/push) are in nix-images.ts.
 */

/** One image the flake builds: a profile's worker image or a task's snapshot image. */
export const ImageTarget = z
  .object({
    kind: z.enum(["profile", "snapshot"]).describe("a profile's worker image or a task's snapshot image"),
    id: z.string().min(1).describe("profile id or catalog task id"),
    package: z.string().min(1).describe("flake package: `nix build <flake>#<package>`"),
    name: z.string().min(1).describe("image name it loads as"),
    tag: z.string().min(1).describe("image tag (the image's Nix output hash)"),
    expr: z
      .string()
      .optional()
      .describe(
        "for a task the flake does not list: the `nix build --impure --expr` calling lib.mkSnapshotImage",
      ),
  })
  .strict();
export type ImageTarget = z.infer<typeof ImageTarget>;

/** A tag not known before the build (an expression target's output hash). */
export const TAG_AFTER_BUILD = "after-build";

/** streamLayeredImage's default tag: the output hash, i.e. the store path's hash part. */
export function tagOfStorePath(storePath: string): string {
  const m = /^\/nix\/store\/([0-9a-df-np-sv-z]{32})-/.exec(storePath);
  if (!m) throw new UsageError(`${storePath} is not a Nix store path`);
  return m[1]!;
}

/**
 * The images to act on: every profile and snapshot image, or only those named by `--profile`
 * (profile ids) and `--task` (task ids with a snapshot image). Throws naming an unknown id and the
 * known ones.
 */
export function selectImageTargets(
  facts: FlakeFacts,
  sel: { readonly profiles: readonly string[]; readonly tasks: readonly string[] },
): ImageTarget[] {
  const profiles: ImageTarget[] = Object.entries(facts.profiles).map(([id, p]) => ({
    kind: "profile",
    id,
    ...p.image,
  }));
  const snapshots: ImageTarget[] = Object.entries(facts.snapshots).map(([id, s]) => ({
    kind: "snapshot",
    id,
    ...s.image,
  }));
  if (sel.profiles.length === 0 && sel.tasks.length === 0) return [...profiles, ...snapshots];
  const pick = (all: ImageTarget[], ids: readonly string[], flag: string) =>
    ids.map((id) => {
      const t = all.find((x) => x.id === id);
      if (!t) {
        throw new UsageError(
          `${flag} ${id}: the flake has no such image (known: ${all.map((x) => x.id).join(", ") || "none"})`,
          "`flakegym images list` shows what the flake builds",
        );
      }
      return t;
    });
  return [...pick(profiles, sel.profiles, "--profile"), ...pick(snapshots, sel.tasks, "--task")];
}

/** The oldest Nix that can evaluate nixpkgs (its lib/minver.nix). */
export const NIXPKGS_MIN_NIX: readonly [number, number] = [2, 18];

/** Exit status of `flakegym images build|load` when this machine cannot build the images. */
export const EXIT_NEEDS_NIX = 3;

/** Can this Nix build the flake's images? From `nix --version` (undefined: no nix). */
export type NixBuildCapability =
  | { readonly kind: "ok"; readonly version: string }
  | { readonly kind: "unavailable"; readonly reason: string; readonly whatToRun: string };

export function nixBuildCapability(versionLine: string | undefined): NixBuildCapability {
  const whatToRun = [
    "on a machine with Nix >= 2.18 (flakes enabled) that reaches nixpkgs and a binary cache:",
    "  nix build .#<package> && ./result | podman load    (or: flakegym images load there)",
    "or install upstream Nix here (e.g. the cachix/install-nix-action CI job, .github/workflows/nix.yml)",
  ].join("\n");
  if (versionLine === undefined) {
    return { kind: "unavailable", reason: "`nix` is not installed", whatToRun };
  }
  const m = /(\d+)\.(\d+)(?:\.\d+)?/.exec(versionLine);
  const [major, minor] = NIXPKGS_MIN_NIX;
  if (!m || Number(m[1]) * 1000 + Number(m[2]) < major * 1000 + minor) {
    return {
      kind: "unavailable",
      reason: `${versionLine.trim() || "nix"} cannot evaluate nixpkgs (it needs Nix >= ${major}.${minor})`,
      whatToRun,
    };
  }
  return { kind: "ok", version: m[0] };
}

/** The image name podman reports after `podman load` ("Loaded image: <ref>"), or undefined. */
export function parseLoadedImage(stdout: string): string | undefined {
  const m = /^Loaded image(?:\(s\))?:\s*(\S+)/m.exec(stdout);
  return m?.[1];
}

/** What `flakegym images load` records per image (images.json). */
export const ImageRecord = ImageTarget.extend({
  storePath: z.string().startsWith("/").describe("the stream script `nix build` produced"),
  imageId: z.string().min(1).describe("podman's image id after `podman load` (sha256 of the config)"),
  loadedAs: z.string().min(1).describe("the reference podman loaded it as"),
  pushed: z
    .string()
    .optional()
    .describe("`<registry>/<name>@<digest>` after --push: what a Nomad job's `image` names"),
  flakeRef: z.string().min(1).describe("the flake it was built from"),
  recordedAt: z.string().describe("ISO time of the load"),
}).strict();
export type ImageRecord = z.infer<typeof ImageRecord>;

export const ImageRecords = z
  .object({ images: z.array(ImageRecord).describe("loaded images, newest last, one per name:tag") })
  .strict();
export type ImageRecords = z.infer<typeof ImageRecords>;

/** Adds or replaces (same name and tag) one record. */
export function upsertImageRecord(records: ImageRecords, rec: ImageRecord): ImageRecords {
  return {
    images: [...records.images.filter((r) => !(r.name === rec.name && r.tag === rec.tag)), rec],
  };
}

/** `$FLAKEGYM_CACHE/images.json`, else `~/.cache/flakegym/images.json` (XDG_CACHE_HOME honoured). */
export function defaultImageRecordFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(flakegymCacheRoot(env), "images.json");
}
