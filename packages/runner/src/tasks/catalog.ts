import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { FlakegymError } from "../errors.js";

/** The built-in catalog: one directory per task holding a `task.json`. */
export const BUILTIN_CATALOG_DIR = fileURLToPath(new URL("../../catalog/", import.meta.url));

/** The fields `tasks list` shows; the full task schema lives with task intake. */
export const CatalogEntry = z.object({
  id: z.string().min(1).describe("task id, equal to its directory name"),
  summary: z.string().describe("one line describing the task"),
  profile: z.string().describe("toolchain profile id"),
});
export type CatalogEntry = z.infer<typeof CatalogEntry>;

export async function listCatalog(dir: string = BUILTIN_CATALOG_DIR): Promise<CatalogEntry[]> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch (cause) {
    throw new FlakegymError("E_CATALOG", `cannot read task catalog directory ${dir}`, {
      cause,
      hint: "pass --catalog <dir> pointing at a directory of task folders",
    });
  }
  const out: CatalogEntry[] = [];
  for (const name of names.sort()) {
    const file = join(dir, name, "task.json");
    const parsed = CatalogEntry.safeParse(JSON.parse(await readFile(file, "utf8")));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new FlakegymError("E_CATALOG", `${file}: field '${issue.path.join(".")}': ${issue.message}`);
    }
    out.push(parsed.data);
  }
  return out;
}
