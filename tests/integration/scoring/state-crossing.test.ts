import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { workspaceDiff } from "@flakegym/cline-vendor";
import {
  baseCommitOf,
  buildSnapshot,
  type HiddenTests,
  loadTask,
  snapshotSpecOfTask,
  touchedPaths,
} from "@flakegym/runner";
import { makeTempDir, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forkWithWorker, scoreInFork } from "./score-in-fork.js";

// "No state but the diff crosses from rollout to scoring", walked rather than argued: a sandbox on
// a fork of a task's snapshot (the rollout's side) writes a marker file into every directory it
// can write — the workspace and its ignored build dirs, .git (hooks, info, objects), deps/ (the
// cargo, go, npm and pip caches), HOME, any writable temp dir — while it stays up, its diff is taken as rollout
// takes it, and the scoring run of that diff (a fresh fork, the production scorer) looks for the
// marker everywhere it can see: only the paths the diff carries may hold it.

const PRUNE = String.raw`\( -path /proc -o -path /sys -o -path /dev \) -prune -o`;

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-crossing-");
});
afterAll(async () => {
  await tmp.cleanup();
});

describe("state outside the diff", () => {
  it("a marker in every writable directory of the rollout's sandbox reaches scoring only through the diff", async () => {
    const task = await loadTask("truncate-runes");
    const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
    const mark = `flakegym-crossing-${randomBytes(6).toString("hex")}`;
    // the rollout's side: a sandbox on a fork of its own, up until scoring is done
    const rollout = await forkWithWorker({ dir: tmp.path, name: "rollout", task, snapshot });
    const { worker } = rollout;
    try {
      const planted = await worker.exec(
        `n=0; for d in $(find / ${PRUNE} -type d -writable -print 2>/dev/null); do ` +
          `echo planted > "$d/${mark}" 2>/dev/null && n=$((n+1)); done; echo "$n"`,
        { timeoutMs: 120_000 },
      );
      const count = Number(planted.stdout.trim());
      // the walk reached the places that matter: the workspace's .git and the package caches among them
      expect(count, planted.stderr).toBeGreaterThan(20);
      const where = await worker.exec(`find / ${PRUNE} -name ${mark} -print 2>/dev/null`, {
        timeoutMs: 60_000,
      });
      const home = (await worker.exec('printf %s "$HOME"', { timeoutMs: 10_000 })).stdout;
      for (const place of ["/.git/hooks/", "/deps/go/cache/", `${home}/`])
        expect(where.stdout, `no marker under ${place}`).toContain(place);

      const objects = join(snapshot.workspace, ".git", "objects");
      const diff = (
        await workspaceDiff({
          workspace: rollout.workspace,
          baseCommit: baseCommitOf(snapshot.manifest),
          baseObjects: objects,
        })
      ).patch.toString();
      const carried = touchedPaths(diff);
      expect(carried.length, "the workspace's own markers are in the diff").toBeGreaterThan(0);
      expect(carried.every((p) => p.endsWith(mark))).toBe(true);

      // scoring, while the rollout's sandbox is still up: its one term lists the markers it finds
      // outside the paths the diff carries
      // the scan proves it can see: the diff's own markers must be there, and nothing else
      const only = carried.map((p) => `-e '${p}'`).join(" ");
      const scan =
        `all=$(find / ${PRUNE} -name ${mark} -print 2>/dev/null | sed "s|^$PWD/||"); ` +
        `seen=$(printf '%s\\n' "$all" | grep -cxF ${only}); ` +
        `found=$(printf '%s\\n' "$all" | grep -vxF ${only}); ` +
        `if [ -n "$found" ]; then echo "$found" | wc -l; echo "$found" | head -n 4; exit 1; fi; ` +
        `[ "$seen" -eq ${carried.length} ] || { echo "the diff's own markers: $seen of ${carried.length} seen"; exit 2; }`;
      const hidden: HiddenTests = { testFiles: [], commands: [], timeoutMs: 120_000 };
      const s = await scoreInFork({
        dir: tmp.path,
        name: "scoring",
        task,
        snapshot,
        hidden,
        diff,
        weights: { tests: 0, build: 1, lint: 0, judge: 0 },
        buildCmd: scan,
      });
      expect(s.terms, `markers outside the diff reached scoring: ${s.terms[0]?.detail}`).toMatchObject([
        { name: "build", value: 1 },
      ]);
      console.log(
        `state crossing: ${count} directories planted in the rollout's sandbox, ${carried.length} carried by the diff, none other seen by scoring`,
      );
    } finally {
      await rollout.release();
    }
  }, 600_000);
});
