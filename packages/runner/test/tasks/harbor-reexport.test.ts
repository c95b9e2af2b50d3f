import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTask } from "../../src/tasks/catalog.js";
import { type HarborTaskToml, parseTaskToml } from "../../src/tasks/harbor.js";
import { readHarborDir } from "../../src/tasks/harbor-dir.js";
import { exportHarborDir } from "../../src/tasks/harbor-export.js";
import { reexportTaskToml, restoreTestScript } from "../../src/tasks/harbor-reexport.js";
import { writeTaskFolder } from "../../src/tasks/task-dir.js";
import type { TaskSpec } from "../../src/tasks/task-spec.js";
import { findBwrap } from "../../src/workers/local/shape.js";

const FIXTURES = fileURLToPath(new URL("../../../../tests/fixtures/harbor/", import.meta.url));
const noBwrap = findBwrap() === undefined;
if (noBwrap)
  console.log(
    "skipped the Harbor re-export round trip: bubblewrap is not installed (solve.sh runs only in a sandbox)",
  );

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-reexport-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("an imported Harbor task exported back", () => {
  it("puts test.sh's paths back", () => {
    expect(
      restoreTestScript(
        "cd $HARBOR_WORKSPACE && pytest $HARBOR_ROOT/tests/t.py; echo 1 > $HARBOR_ROOT/logs/verifier/reward.txt",
        "/app",
      ),
    ).toBe("cd /app && pytest /tests/t.py; echo 1 > /logs/verifier/reward.txt");
  });

  it("names the workdir in task.toml, which a kept Dockerfile without WORKDIR needs (Harbor's hello-workdir)", () => {
    const spec = {
      limits: { memoryMb: 2048, diskMb: 10240, wallClockMs: 120_000 },
      tests: { dir: "hidden", run: { kind: "eval_cmd", command: "timeout -k 10 120 bash t.sh" } },
      workdir: "/custom-workdir",
    } as unknown as TaskSpec;
    const toml = parseTaskToml(reexportTaskToml(spec)) as HarborTaskToml;
    expect(toml.environment.workdir).toBe("/custom-workdir");
    expect(toml.verifier.timeout_sec).toBe(120);
    const { workdir: _, ...noWorkdir } = spec;
    expect(reexportTaskToml(noWorkdir as TaskSpec)).not.toMatch(/workdir/);
  });

  it.skipIf(noBwrap)(
    "is a Harbor dir as Harbor runs it, and importing it again gives the same task",
    async () => {
      const first = await readHarborDir(join(FIXTURES, "apt-oracle"), 1);
      if (!first.ok) throw new Error(first.error.reason);
      await writeTaskFolder(join(tmp, "catalog"), first.task);
      const dir = await exportHarborDir(
        await loadTask("apt-oracle", join(tmp, "catalog")),
        join(tmp, "harbor"),
      );
      // the task's own Dockerfile goes back as it was (kept at import under harbor-environment/)
      expect(await readFile(join(dir, "environment/Dockerfile"), "utf8")).toBe(
        await readFile(join(FIXTURES, "apt-oracle/environment/Dockerfile"), "utf8"),
      );
      // a task folder imported before it was kept: a Dockerfile made from the task's metadata
      await rm(join(tmp, "catalog/apt-oracle/harbor-environment"), { recursive: true });
      const made = await exportHarborDir(
        await loadTask("apt-oracle", join(tmp, "catalog")),
        join(tmp, "harbor-made"),
      );
      const dockerfile = await readFile(join(made, "environment/Dockerfile"), "utf8");
      expect(dockerfile).toMatch(
        /^FROM ubuntu:24\.04\nRUN apt-get update && apt-get install -y curl python3 python3-pytest /,
      );
      expect(dockerfile).toContain("WORKDIR /app\nCOPY repo/ /app/\n");
      const testSh = await readFile(join(dir, "tests/test.sh"), "utf8");
      expect(testSh).toContain("python3 -m pytest /tests/test_wordcount.py -rA");
      expect(testSh).toContain("echo 1 > /logs/verifier/reward.txt");
      expect(testSh).not.toContain("HARBOR_");
      expect(await readFile(join(dir, "task.toml"), "utf8")).toMatch(/\[verifier\]\ntimeout_sec = 120\.0/);
      const again = await readHarborDir(dir, 1);
      if (!again.ok) throw new Error(`${again.error.field}: ${again.error.reason}`);
      const { metadata: m1, ...spec1 } = first.task.spec;
      const { metadata: m2, ...spec2 } = again.task.spec;
      expect(spec2).toEqual({ ...spec1, id: spec2.id });
      expect(m2?.harbor_image).toBe(m1?.harbor_image);
      for (const f of [
        "solution.patch",
        "hidden/.harbor/tests/test.sh",
        "hidden/.harbor/tests/test_wordcount.py",
      ])
        expect(String(again.task.files[f])).toBe(String(first.task.files[f]));
    },
  );
});
