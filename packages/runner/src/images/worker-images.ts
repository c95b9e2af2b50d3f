import { match } from "ts-pattern";
import { z } from "zod";
import type { RecordedImage } from "../run-format/schema.js";
import type { ImageRecord, ImageRecords, NixBuildCapability } from "./targets.js";

/**
 * Which image each worker runs on (`rollout --images nix`): the images `flakegym images load`
 * recorded, chosen per task. Pure: reading the records file is nix-images.ts's job.
 */

/** `--images`: `host` = this machine's toolchain (/usr); `nix` = the flake's images from the records. */
export const ImagesMode = z
  .enum(["host", "nix"])
  .describe(
    "what workers run on: host = this machine's /usr (the local backend, or podman's minimal image with /usr bound); nix = the flake's images recorded by `flakegym images load` (podman, Nomad docker/podman drivers)",
  );
export type ImagesMode = z.infer<typeof ImagesMode>;

/**
 * A task's worker image: the snapshot image for the task when one is recorded, else (unless
 * `snapshotOnly`) its profile's.
 */
export function chooseWorkerImage(
  records: ImageRecords,
  task: { readonly id: string; readonly profile: string },
  snapshotOnly = false,
): ImageRecord | undefined {
  const newest = (kind: ImageRecord["kind"], id: string) =>
    records.images.filter((r) => r.kind === kind && r.id === id).at(-1);
  return newest("snapshot", task.id) ?? (snapshotOnly ? undefined : newest("profile", task.profile));
}

/**
 * Where a backend refers to a recorded image: podman by its local reference (the runner's fork is
 * bound at /workspace, so a profile image serves), Nomad by pushed digest (the work tree is the
 * image's /workspace, so only a task's snapshot image serves).
 */
export type ImageConsumer = "podman" | "nomad";

/** The reference a worker of `consumer` starts from, or undefined (Nomad needs a pushed image). */
export function imageRefFor(rec: ImageRecord, consumer: ImageConsumer): string | undefined {
  return match(consumer)
    .with("podman", () => rec.loadedAs)
    .with("nomad", () => rec.pushed)
    .exhaustive();
}

/** The provenance entry of a worker started from `rec` as `ref`. */
export function provenanceOfImage(rec: ImageRecord, ref: string): RecordedImage {
  return {
    name: rec.name,
    tag: rec.tag,
    kind: rec.kind,
    digest: rec.imageId,
    storePath: rec.storePath,
    ref,
  };
}

/** One task whose image is missing, and the command that makes it. */
export interface MissingImage {
  readonly taskId: string;
  readonly profile: string;
  /** What is missing, e.g. "no image for profile node" or "flakegym/node-env:… is not pushed". */
  readonly what: string;
  readonly command: string;
}

/**
 * Every task's image for `consumer`, or the tasks without one (each with the command that makes
 * it). A task's snapshot image is preferred; without one the profile's image serves.
 */
export function resolveWorkerImages(
  records: ImageRecords,
  tasks: readonly { readonly id: string; readonly profile: string }[],
  consumer: ImageConsumer,
):
  | { readonly kind: "ok"; readonly images: ReadonlyMap<string, RecordedImage> }
  | { readonly kind: "missing"; readonly missing: readonly MissingImage[] } {
  const images = new Map<string, RecordedImage>();
  const missing: MissingImage[] = [];
  for (const t of tasks) {
    const rec = chooseWorkerImage(records, t, consumer === "nomad");
    if (!rec) {
      missing.push({
        taskId: t.id,
        profile: t.profile,
        ...(consumer === "nomad"
          ? {
              what: `no snapshot image recorded for task ${t.id} (Nomad's container drivers take the work tree from the image)`,
              command: `flakegym images load --task ${t.id} --push <registry>`,
            }
          : {
              what: `no image recorded for task ${t.id} nor for its profile ${t.profile}`,
              command: `flakegym images load --profile ${t.profile}`,
            }),
      });
      continue;
    }
    const ref = imageRefFor(rec, consumer);
    if (!ref) {
      const sel = rec.kind === "snapshot" ? `--task ${rec.id}` : `--profile ${rec.id}`;
      missing.push({
        taskId: t.id,
        profile: t.profile,
        what: `${rec.name}:${rec.tag} is loaded here but not pushed to a registry the Nomad clients pull from`,
        command: `flakegym images load ${sel} --push <registry>`,
      });
      continue;
    }
    images.set(t.id, provenanceOfImage(rec, ref));
  }
  return missing.length ? { kind: "missing", missing } : { kind: "ok", images };
}

/** The message of a `--images nix` run some task has no image for (printed before anything runs). */
export function missingImagesMessage(
  missing: readonly MissingImage[],
  recordsFile: string,
  nix: NixBuildCapability,
): string {
  const lines = [
    `--images nix: ${missing.length} task(s) have no worker image in ${recordsFile}:`,
    ...missing.map((m) => `  task ${m.taskId} (profile ${m.profile}): ${m.what}; run: ${m.command}`),
  ];
  lines.push(
    match(nix)
      .with({ kind: "ok" }, ({ version }) => `Nix ${version} is present: run the commands above, then retry.`)
      .with(
        { kind: "unavailable" },
        ({ reason, whatToRun }) =>
          `This machine cannot build them: ${reason}.\n${whatToRun}\nor run without --images nix (the workers then use this machine's /usr).`,
      )
      .exhaustive(),
  );
  return lines.join("\n");
}
