import { join, relative } from "node:path";
import { FlakegymError } from "../errors.js";
import type {
  RecordedImage,
  RunConfig,
  StoreWorkerProvenance,
  WorkerImageProvenance,
} from "../run-format/schema.js";
import type { LoadedTask } from "../tasks/catalog.js";
import type { TaskProfile } from "../tasks/task-profile.js";
import type { RolloutTask } from "./deps.js";

/** A rollout's tasks as the wiring sees them: catalog tasks and dataset rows alike. */

/** What the wiring needs of a loaded task, catalog task or dataset row alike. */
export interface TaskRuntime {
  readonly id: string;
  readonly profile: LoadedTask["spec"]["profile"];
  readonly limits: { memoryMb: number; pids: number; cpuSeconds: number; diskMb: number };
  readonly catalog?: LoadedTask;
  readonly row?: TaskProfile;
}

/** Worker limits of a dataset row (snapshotSpecOfProfile uses the same). */
export const ROW_LIMITS = { memoryMb: 4096, pids: 1024, cpuSeconds: 3600, diskMb: 8192 };

/** Gold replays a reference patch; dataset rows have none. */
export function noReference(t: { id: string; row?: TaskProfile }): FlakegymError {
  const where = t.row ? ` (${t.row.source.file} row ${t.row.source.row})` : "";
  return new FlakegymError(
    "E_NO_REFERENCE",
    `task '${t.id}'${where} has no reference solution, so the gold policy cannot run it`,
    {
      hint: "dataset rows need a model policy: --policy openai:<url>#<model>, anthropic:…, scripted:<plan>, or empty",
    },
  );
}

/**
 * The task's image (--images nix; checked before the run), else the flake's store paths it runs on
 * (`nix run .#rollout` on the local backend), else this machine's /usr. Pure.
 */
export function imageOf(
  images: RunConfig["images"],
  workerImages: ReadonlyMap<string, RecordedImage> | undefined,
  taskId: string,
  storeWorkers?: ReadonlyMap<string, StoreWorkerProvenance>,
): WorkerImageProvenance {
  if (images !== "nix") return storeWorkers?.get(taskId) ?? "host /usr";
  const image = workerImages?.get(taskId);
  if (!image) {
    throw new FlakegymError("E_IMAGE_MISSING", `--images nix: no worker image chosen for task ${taskId}`, {
      hint: "`flakegym images list` shows what is loaded; `flakegym images load --profile <profile>` loads one",
    });
  }
  return image;
}

/** The runtime of a dataset row. Pure. */
export function rowRuntimeOf(row: TaskProfile): TaskRuntime {
  return { id: row.id, profile: row.profile, limits: ROW_LIMITS, row };
}

/** A dataset row as a rollout task: no hidden tests, so the scorer leaves the tests term out. Pure. */
export function rowTaskOf(
  row: TaskProfile,
  testTimeoutMs: number,
  image: WorkerImageProvenance,
): RolloutTask {
  return {
    id: row.id,
    rowId: row.id,
    datasetRow: row.source.row,
    profile: row.profile,
    prompt: row.prompt,
    network: row.repoKind === "local" ? "none" : "required",
    hidden: { testFiles: [], commands: [], timeoutMs: testTimeoutMs },
    image,
  };
}

/** A catalog task as a rollout task: its row id is its task.json under the catalog. Pure. */
export function catalogTaskOf(
  id: string,
  t: LoadedTask,
  catalog: string,
  hidden: RolloutTask["hidden"],
  image: WorkerImageProvenance,
): RolloutTask {
  return {
    id,
    rowId: relative(catalog, join(t.dir, "task.json")),
    profile: t.spec.profile,
    prompt: t.spec.prompt,
    network: t.spec.network,
    hidden,
    image,
  };
}
