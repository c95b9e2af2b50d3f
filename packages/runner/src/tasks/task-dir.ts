import { randomBytes } from "node:crypto";
import { chmod, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { FlakegymError } from "../errors.js";
import type { TaskSpec } from "./task-spec.js";

/** A task to write as a folder: its spec and the files (relative path → content) it names. */
export interface TaskFolder {
  readonly spec: TaskSpec;
  readonly files: Readonly<Record<string, string | Buffer>>;
  /** Those of `files` written executable (0755): a built Harbor workspace's scripts keep the image's bit. */
  readonly executables?: readonly string[];
}

/** Writes `files` (relative paths) under `root`; a path that leaves `root` is refused. */
export async function writeFiles(
  root: string,
  files: Readonly<Record<string, string | Buffer>>,
  executables: readonly string[] = [],
): Promise<void> {
  const exec = new Set(executables);
  for (const [rel, content] of Object.entries(files)) {
    if (rel.startsWith("/") || rel.split("/").some((p) => p === ".." || p === "")) {
      throw new FlakegymError("E_CATALOG", `file name '${rel}' leaves its folder ${root}`);
    }
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), content, exec.has(rel) ? { mode: 0o755 } : {});
    if (exec.has(rel)) await chmod(join(root, rel), 0o755);
  }
}

/**
 * Writes `<parent>/<spec.id>/` (task.json unless `taskJson: false`, and the files) whole: into a
 * temporary sibling first, renamed into place, so a reader never sees half a task. Refuses to
 * replace an existing folder unless `replace`. Returns the folder's path.
 */
export async function writeTaskFolder(
  parent: string,
  task: TaskFolder,
  o: { replace?: boolean; taskJson?: boolean } = {},
): Promise<string> {
  const dest = join(parent, task.spec.id);
  const tmp = join(parent, `.${task.spec.id}.tmp-${randomBytes(4).toString("hex")}`);
  await mkdir(tmp, { recursive: true });
  try {
    if (o.taskJson !== false)
      await writeFile(join(tmp, "task.json"), `${JSON.stringify(task.spec, null, 2)}\n`);
    await writeFiles(tmp, task.files, task.executables);
    if (o.replace) await rm(dest, { recursive: true, force: true });
    try {
      await rename(tmp, dest);
    } catch (cause) {
      throw new FlakegymError("E_CATALOG", `cannot write task folder ${dest}: ${(cause as Error).message}`, {
        cause,
        hint: "the folder exists already: remove it, or pass --replace",
      });
    }
    return dest;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
