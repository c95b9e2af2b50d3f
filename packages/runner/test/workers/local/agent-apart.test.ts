import { mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_IDS, agentApartOf, closeCoreDirs } from "../../../src/workers/local/agent-apart.js";
import { SCORER_HOST_UID } from "../../../src/workers/local/bwrap-args.js";
import { tempDir as makeTempDir } from "../../helpers/temp-dir.js";

describe("the agent's sandbox as two users (issue 42)", () => {
  it.each([
    ["a root runner that may map two users", { uid: 0, gid: 0 }, {}, { runnerUid: 0, runnerGid: 0 }],
    ["asked for one user", { uid: 0, gid: 0 }, { FLAKEGYM_AGENT_USERS: "one" }, undefined],
    ["a runner that may not (not root, or the scorer's host user unmapped)", undefined, {}, undefined],
    [
      "the scorer's switch does not decide the agent's",
      { uid: 0, gid: 5 },
      { FLAKEGYM_SCORING_USERS: "one" },
      { runnerUid: 0, runnerGid: 5 },
    ],
  ])("%s", (_, runner, env, expected) => {
    expect(agentApartOf(runner, env)).toEqual(expected);
  });

  it("the agent is the sandbox's uid 1000, the workspace's owner there", () => {
    expect(AGENT_IDS).toEqual({ uid: 1000, gid: 1000 });
  });

  const root = process.getuid?.() === 0;
  if (!root) console.log("skipped closing the core's dirs: it needs root (chown to another user)");
  it.skipIf(!root)("the core's dirs become the sandbox root's host user's, mode 0700", async () => {
    await using tmp = await makeTempDir("flakegym-agent-apart-");
    const dirs = [join(tmp.path, "config"), join(tmp.path, "sock")];
    for (const d of dirs) await mkdir(d, { mode: 0o755 });
    await closeCoreDirs(dirs);
    for (const d of dirs) {
      const s = await stat(d);
      expect([s.uid, s.gid, s.mode & 0o777]).toEqual([SCORER_HOST_UID, SCORER_HOST_UID, 0o700]);
    }
  });
});
