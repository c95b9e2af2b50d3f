import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  hiddenTestsOf,
  type LoadedTask,
  loadTask,
  type Snapshot,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scoreInFork } from "../score-in-fork.js";
import { attackDiff } from "./attack.js";
import { PROTOCOL_ATTACKS } from "./attacks-protocol.js";
import { VERDICT_INPUT_PODMAN } from "./attacks-verdict-input.js";

// The scoring protocol's forgeries (issue 42) on a podman scoring container, scored for real with
// the production scorer: a daemon the code leaves rewriting the script's results, the nonce read
// from an ancestor's command line or memory and a forged `stopped install` written into the
// scoring shell's stdout, a watcher taking the channel; an emission nested past the host's schema
// (attacks-verdict-input.ts). Each must score 0 there as on the local backend; the channel the
// scorer reports says how it was kept out of reach.
const missing = ["/usr/bin/podman", "/usr/sbin/runc"].filter((p) => !existsSync(p));
const notRoot = process.getuid?.() !== 0;
if (missing.length)
  console.warn(`podman protocol suite skipped: missing ${missing.join(", ")} — apt-get install podman runc`);
else if (notRoot)
  console.warn(
    "podman protocol suite skipped: the scoring forks' bounded dirs and read-only hidden files need root",
  );

const TASK = "chunked-partial-tail";

describe.skipIf(missing.length > 0 || notRoot)("podman scoring: the protocol's forgeries", () => {
  let tmp: TempDir;
  let task: LoadedTask;
  let snapshot: Snapshot;

  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-podman-protocol-");
    task = await loadTask(TASK);
    snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
  }, 600_000);
  afterAll(async () => {
    await tmp?.cleanup();
  });

  it("control: the reference solution scores 1 on podman (a 0 below is the attack's, not the backend's)", async () => {
    const s = await scoreInFork({
      dir: tmp.path,
      name: "gold",
      task,
      snapshot,
      hidden: await hiddenTestsOf(task, 120_000),
      diff: await readFile(task.paths.solution, "utf8"),
      backend: "podman",
    });
    console.log(`podman gold: reward ${s.reward}, channel ${s.channel}`);
    expect(s.reward).toBe(1);
  }, 600_000);

  it.each(
    [...PROTOCOL_ATTACKS, ...VERDICT_INPUT_PODMAN]
      .filter((a) => a.task === TASK)
      .map((a) => [a.id, a] as const),
  )(
    "%s scores 0 on podman",
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
      console.log(`podman ${attack.id}: reward ${s.reward}, channel ${s.channel} — ${why}`);
      expect(s.reward, attack.what).toBe(0);
    },
    600_000,
  );
});
