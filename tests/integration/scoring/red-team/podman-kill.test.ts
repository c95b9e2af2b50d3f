import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import {
  buildSnapshot,
  hiddenTestsOf,
  type LoadedTask,
  loadTask,
  type Snapshot,
  snapshotSpecOfTask,
  type Worker,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scoreInFork } from "../score-in-fork.js";
import { attackDiff } from "./attack.js";
import { OUTCOME_ATTACKS, PAUSE_AFTER_TESTS, PAUSED_MARKER } from "./attacks-outcome.js";

// Kills on a podman scoring container, scored for real with the production scorer. A kill from
// inside (code under test signalling PID 1, every pid, `kill -9 -1`) must score 0 (tests_tampered);
// a kill from outside (the container SIGKILLed by the machinery's side mid-scoring) must be a lost
// scoring run (E_SCORE_SCRIPT, retried as infra), never a 0. Written before the fix: with PID 1 a
// shell that exits on TERM, the kill-init attacks ended their container (a kill from outside, once
// the backend reads a gone container as one), and the outside kill scored 0.
const missing = ["/usr/bin/podman", "/usr/sbin/runc"].filter((p) => !existsSync(p));
const notRoot = process.getuid?.() !== 0;
if (missing.length)
  console.warn(`podman kill suite skipped: missing ${missing.join(", ")} — apt-get install podman runc`);
else if (notRoot)
  console.warn(
    "podman kill suite skipped: the scoring forks' bounded dirs and read-only hidden files need root",
  );

const TASK = "chunked-partial-tail";
const KILLS = OUTCOME_ATTACKS.filter((a) => a.id.startsWith("py-kill-"));

describe.skipIf(missing.length > 0 || notRoot)("podman scoring: who killed the container", () => {
  let tmp: TempDir;
  let task: LoadedTask;
  let snapshot: Snapshot;

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-podman-kill-");
    task = await loadTask(TASK);
    snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
  }, 600_000);
  afterAll(async () => {
    await tmp?.cleanup();
  });

  it.each(KILLS.map((a) => [a.id, a] as const))(
    "%s scores 0 (its kills end the script at most, never the container)",
    async (_id, attack) => {
      const s = await scoreInFork({
        dir: tmp.path,
        name: attack.id,
        task,
        snapshot,
        hidden: await hiddenTestsOf(task, 120_000),
        diff: await attackDiff(attack, snapshot.workspace),
        backend: "podman",
      });
      const why = s.gate ? `${s.gate.reason}: ${s.gate.detail.slice(0, 200)}` : JSON.stringify(s.tests);
      console.log(`podman ${attack.id}: reward ${s.reward} — ${why}`);
      // the init outlives every signal: the script either goes on (the graded tests fail) or was
      // ended by the attack (tests_tampered); never a lost run
      expect(s.reward, attack.what).toBe(0);
      // a podman scoring container runs without capabilities: the scoring shells are sealed too
      // (its tmpfs /tmp is noexec: the execute-only shell runs from the workspace)
      expect(s.channel).toBe("sealed");
    },
    600_000,
  );

  it("a kill from outside after the test step is a lost scoring run (retried), not a 0", async () => {
    const killed: string[] = [];
    const diff =
      (await readFile(task.paths.solution, "utf8")) +
      (await attackDiff(
        { id: "pause", cls: "infra-dodge", task: TASK, what: "pauses", append: PAUSE_AFTER_TESTS },
        snapshot.workspace,
      ));
    const outcome = await scoreInFork({
      dir: tmp.path,
      name: "outside-kill",
      task,
      snapshot,
      hidden: await hiddenTestsOf(task, 120_000),
      diff,
      backend: "podman",
      onWorker: (worker, workspace) => void killWhenPaused(worker, workspace, tmp.path, killed),
    }).then(
      (s) => new Error(`scored: reward ${s.reward}, gate ${s.gate?.reason}: ${s.gate?.detail}`),
      (e: unknown) => e,
    );
    expect(killed.length, "the chaos kill never ran").toBeGreaterThan(0);
    expect(outcome).toMatchObject({ code: "E_SCORE_SCRIPT" });
    expect(String((outcome as Error).message)).toMatch(/killed from outside its sandbox/);
  }, 600_000);
});

/** Once the scoring script pauses after its test step, SIGKILLs the container from outside (bounded). */
async function killWhenPaused(worker: Worker, workspace: string, dir: string, killed: string[]) {
  using deadline = createDeadline({
    timeout: { limit: "the scoring script's pause after its tests", ms: 120_000 },
  });
  while (!existsSync(join(workspace, PAUSED_MARKER))) {
    if (deadline.signal.aborted) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  await execa("podman", ["kill", "-s", "KILL", worker.id], {
    env: { CONTAINERS_CONF: join(dir, "podman", "containers.conf") },
    reject: false,
  });
  killed.push(worker.id);
}
