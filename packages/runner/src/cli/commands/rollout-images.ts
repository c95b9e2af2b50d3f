import { execa } from "execa";
import { chooseNixAppDefault, type NixAppChoice } from "../../images/nix-app.js";
import { nixVersionLine, readImageRecords } from "../../images/nix-images.js";
import { defaultImageRecordFile, EXIT_NEEDS_NIX, nixBuildCapability } from "../../images/targets.js";
import {
  type ImageConsumer,
  type MissingImage,
  missingImagesMessage,
  resolveWorkerImages,
} from "../../images/worker-images.js";
import { runningNixBin } from "../../nix/running-nix.js";
import type { RecordedImage, RunConfig } from "../../run-format/schema.js";
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
    : await catalogTaskProfiles(config.tasks, config.catalog);
  const file = defaultImageRecordFile(ctx.env);
  const found = await findWorkerImages(tasks, config.backend === "nomad" ? "nomad" : "podman", file);
  if (found.missing.length === 0) return found.images;
  const nix = nixBuildCapability(await nixVersionLine(runningNixBin(ctx.env), ctx.env));
  ctx.stderr.write(`flakegym rollout: ${missingImagesMessage(found.missing, file, nix)}\n`);
  return nix.kind === "unavailable" ? EXIT_NEEDS_NIX : 1;
}

export async function catalogTaskProfiles(
  ids: readonly string[],
  catalog: string | undefined,
): Promise<{ id: string; profile: string }[]> {
  return Promise.all(
    ids.map(async (id) => ({
      id,
      profile: (await loadTask(id, catalog ?? BUILTIN_CATALOG_DIR)).spec.profile,
    })),
  );
}

/** Every task's recorded image, and the tasks without one (for podman: also those podman lacks). */
async function findWorkerImages(
  tasks: readonly { id: string; profile: string }[],
  consumer: ImageConsumer,
  file: string,
): Promise<{ images: ReadonlyMap<string, RecordedImage>; missing: MissingImage[] }> {
  const resolved = resolveWorkerImages(readImageRecords(file), tasks, consumer);
  if (resolved.kind === "missing") return { images: new Map(), missing: [...resolved.missing] };
  const missing: MissingImage[] = [];
  if (consumer === "podman") {
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
  return { images: resolved.images, missing };
}

/** `podman --version`'s line, or undefined when podman is missing or broken. */
export async function podmanVersionLine(env?: NodeJS.ProcessEnv): Promise<string | undefined> {
  const r = await execa("podman", ["--version"], { reject: false, timeout: 30_000, stdin: "ignore", env });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

/**
 * The flake app's default (`nix run .#rollout` with none of --backend, --images, --resume,
 * --dataset): the facts {@link chooseNixAppDefault} needs, gathered for the catalog tasks given.
 */
export async function nixAppDefault(
  tasks: readonly string[],
  catalog: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<NixAppChoice> {
  const podman = await podmanVersionLine(env);
  const found =
    podman === undefined
      ? { missing: [] }
      : await findWorkerImages(
          await catalogTaskProfiles(tasks, catalog),
          "podman",
          defaultImageRecordFile(env),
        );
  const nix = nixBuildCapability(await nixVersionLine(runningNixBin(env), env));
  return chooseNixAppDefault({ nix, podman, missing: found.missing });
}

function profileOf(tasks: readonly { id: string; profile: string }[], id: string): string {
  return tasks.find((t) => t.id === id)?.profile ?? "?";
}
