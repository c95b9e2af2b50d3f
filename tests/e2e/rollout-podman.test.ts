import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { BASE_IMAGE } from "@flakegym/runner";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, readScore, TASK } from "./rollout-helpers.js";

/**
 * `flakegym rollout --backend podman` end to end: the real CLI process; each agent worker is a
 * podman container (runc, --network none) whose PID 1 is cline-vendor's supervisor running the real
 * Cline core, reaching the policy gateway only through its unix socket bound in; artifacts are read
 * from the host side of the bind mounts; each score runs in a fresh container. The image is the
 * minimal rootfs the backend imports itself, with this machine's /usr bound read-only.
 */

const missing = ["/usr/bin/podman", "/usr/sbin/runc"].filter((p) => !existsSync(p));
if (missing.length)
  console.warn(
    `e2e/rollout-podman.test.ts: skipped: missing ${missing.join(", ")} — apt-get install podman runc`,
  );

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-podman-");
  // so the run imports the base image itself (a plain `image rm` fails, harmlessly, while in use)
  if (!missing.length) await execa("podman", ["image", "rm", BASE_IMAGE], { reject: false, timeout: 30_000 });
});
afterAll(async () => {
  await tmp.cleanup();
});

/** Names of the containers (running or not) that carry the podman backend's label. */
async function ourContainers(): Promise<string[]> {
  const ps = await execa(
    "podman",
    ["ps", "-a", "--filter", "label=flakegym.worker=1", "--format", "{{.Names}}"],
    {
      timeout: 30_000,
    },
  );
  return ps.stdout.split("\n").filter((l) => l.trim() !== "");
}

describe.skipIf(missing.length > 0)(
  "flakegym rollout --backend podman (real podman, runc, real core)",
  () => {
    it("policy gold, group size 2: rewards [1, 1], artifacts collected, no container left", async () => {
      const out = join(tmp.path, "gold");
      const r = await runCli(
        [
          "rollout",
          "--task",
          TASK,
          "--group-size",
          "2",
          "--concurrency",
          "2",
          "--policy",
          "gold",
          "--backend",
          "podman",
          "--out",
          out,
        ],
        { timeoutMs: 300_000 },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const run = await readRun(out);
      expect(run.manifest.config.backend).toBe("podman");
      expect((await execa("podman", ["image", "exists", BASE_IMAGE], { reject: false })).exitCode).toBe(0);
      expect(run.summary?.tasks[0]).toMatchObject({ taskId: TASK, rewards: [1, 1], group: "written" });
      for (const m of run.metrics)
        expect(m).toMatchObject({ outcome: "completed", boot_ok: true, reward: 1 });

      for (const id of [`${TASK}-t0`, `${TASK}-t1`]) {
        const dir = join(out, "trajectories", id);
        expect(await readdir(join(dir, "cline"))).toEqual(
          expect.arrayContaining([
            "api_conversation_history.json",
            "ui_messages.json",
            "task_metadata.json",
            "diff.patch",
            "manifest.json",
            "outcome.json",
          ]),
        );
        // the diff read from the host side of the workspace mount is the one scored
        const diff = await readFile(join(dir, "diff.patch"), "utf8");
        expect(diff).toContain("src/range.js");
        expect(await readFile(join(dir, "cline", "diff.patch"), "utf8")).toBe(diff);
        expect(await readScore(out, id)).toMatchObject({ reward: 1, tests: { resolved: true } });
        // the model calls went through the gateway socket bound into the container
        const turns = (await readFile(join(dir, "turns.jsonl"), "utf8")).trim().split("\n");
        expect(turns.length).toBeGreaterThanOrEqual(2);
      }

      // every container of this run (agents and scorers) is gone; names carry the run id
      const runId = run.manifest.runId;
      expect(runId).toBeTruthy();
      const prefix = `flakegym-${runId.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
      expect((await ourContainers()).filter((n) => n.startsWith(prefix))).toEqual([]);
    }, 320_000);
  },
);
