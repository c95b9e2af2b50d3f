import { execa } from "execa";
import { nixVersionLine, readImageRecords } from "../../images/nix-images.js";
import { defaultImageRecordFile, EXIT_NEEDS_NIX, nixBuildCapability } from "../../images/targets.js";
import {
  type MissingImage,
  missingImagesMessage,
  type RecordedImage,
  resolveWorkerImages,
} from "../../images/worker-images.js";
import type { RunConfig } from "../../rollout/schema.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../../tasks/catalog.js";
import type { TaskProfile } from "../../tasks/task-profile.js";
import type { CliContext } from "../command.js";

/**
 * `rollout --images nix`, before anything runs: every task's image from the records
 * `flakegym images load` wrote (a task's snapshot image, else its profile's), present in podman
 * (or pushed, for Nomad). Returns the images, or writes which task lacks which image and the
 * command that makes it, and returns the exit status (3 when Nix cannot build them here, as
 * `flakegym images build`; else 1).
 */
export async function preflightWorkerImages(
  config: RunConfig,
  rows: readonly TaskProfile[] | undefined,
  ctx: Pick<CliContext, "env" | "stderr">,
): Promise<ReadonlyMap<string, RecordedImage> | number> {
  const tasks = rows
    ? rows.map((r) => ({ id: r.id, profile: r.profile }))
    : await Promise.all(
        config.tasks.map(async (id) => ({
          id,
          profile: (await loadTask(id, config.catalog ?? BUILTIN_CATALOG_DIR)).spec.profile,
        })),
      );
  const file = defaultImageRecordFile(ctx.env);
  const consumer = config.backend === "nomad" ? "nomad" : "podman";
  const resolved = resolveWorkerImages(readImageRecords(file), tasks, consumer);
  const missing: MissingImage[] = resolved.kind === "missing" ? [...resolved.missing] : [];
  if (resolved.kind === "ok" && consumer === "podman") {
    // a record outlives `podman rmi`: the image itself must be here
    for (const [taskId, img] of resolved.images) {
      const r = await execa("podman", ["image", "exists", img.ref], {
        reject: false,
        timeout: 30_000,
        stdin: "ignore",
      });
      if (r.exitCode === 0) continue;
      const sel = img.kind === "snapshot" ? `--task ${taskId}` : `--profile ${profileOf(tasks, taskId)}`;
      missing.push({
        taskId,
        profile: profileOf(tasks, taskId),
        // exit 1: absent; anything else: podman itself failed
        what: `${img.ref} is recorded in ${file} but podman does not have it${r.exitCode === 1 ? "" : ` (podman: ${r.stderr.trim() || r.shortMessage})`}`,
        command: `flakegym images load ${sel}`,
      });
    }
  }
  if (missing.length === 0 && resolved.kind === "ok") return resolved.images;
  const nix = nixBuildCapability(await nixVersionLine("nix", ctx.env));
  ctx.stderr.write(`flakegym rollout: ${missingImagesMessage(missing, file, nix)}\n`);
  return nix.kind === "unavailable" ? EXIT_NEEDS_NIX : 1;
}

function profileOf(tasks: readonly { id: string; profile: string }[], id: string): string {
  return tasks.find((t) => t.id === id)?.profile ?? "?";
}
