import { cp, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  BUILTIN_CATALOG_DIR,
  listCatalog,
  loadCatalog,
  loadTask,
  taskProfileOf,
} from "../../src/tasks/catalog.js";

describe("the built-in catalog", () => {
  it("validates every task and lists ratatui-2148 plus the offline tasks", async () => {
    const all = await loadCatalog();
    const ids = all.map((t) => t.spec.id);
    expect(ids).toContain("ratatui-2148");
    expect(all.filter((t) => t.spec.network === "none").length).toBeGreaterThanOrEqual(4);
    const rat = all.find((t) => t.spec.id === "ratatui-2148")!;
    expect(rat.spec.source).toMatchObject({ kind: "git", rev: "527e1df9296e4b6d56dc665788ce558558b480c6" });
    expect(rat.spec.network).toBe("required");
    const entries = await listCatalog();
    expect(entries.map((e) => e.id)).toEqual(ids);
  });

  it("taskProfileOf gives the TaskProfile view", async () => {
    const t = await loadTask("tinygauge-vertical");
    expect(taskProfileOf(t)).toMatchObject({
      id: "tinygauge-vertical",
      profile: "rust",
      repoKind: "local",
      commit: t.spec.source.kind === "local" ? t.spec.source.commit : "",
    });
  });

  it("an unknown id lists the known ones", async () => {
    await expect(loadTask("nope")).rejects.toMatchObject({
      code: "E_TASK_NOT_FOUND",
      hint: expect.stringContaining("tinygauge-vertical"),
    });
  });

  it("a bad task.json names the file and the field; a missing file it names is an error", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fg-catalog-"));
    await cp(join(BUILTIN_CATALOG_DIR, "strbuf-repr-escapes"), join(dir, "strbuf-repr-escapes"), {
      recursive: true,
    });
    const file = join(dir, "strbuf-repr-escapes", "task.json");
    const spec = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...spec, profile: "cobol" }));
    await expect(loadCatalog(dir)).rejects.toThrow(new RegExp(`${file}: field 'profile'`));
    await writeFile(file, JSON.stringify({ ...spec, solution: "missing.patch" }));
    await expect(loadCatalog(dir)).rejects.toThrow(/field 'solution': .*missing.patch does not exist/);
    await writeFile(file, JSON.stringify({ ...spec, id: "other" }));
    await expect(loadCatalog(dir)).rejects.toThrow(/'other' differs from its directory name/);
  });
});
