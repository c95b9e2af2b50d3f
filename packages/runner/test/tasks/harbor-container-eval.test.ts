import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerEvalCommand } from "../../src/tasks/harbor-built.js";
import { buildBwrapArgs } from "../../src/workers/local/bwrap-args.js";
import {
  CONTAINER_CAPS,
  containerPrefix,
  containerRootOf,
  mountContainerRoot,
  unmountContainerRoot,
} from "../../src/workers/local/container-root.js";
import { findBwrap } from "../../src/workers/local/shape.js";

const root = process.geteuid?.() === 0;
const bwrap = findBwrap();

/**
 * A Harbor verifier that checks what only the real paths give: it runs from the WORKDIR, reads
 * its fixture at /tests (a read guard resolving paths would see through a link), writes its reward
 * at /logs/verifier, and a second user (`setpriv --reuid`) reads the workspace.
 */
const TEST_SH = [
  "set -e",
  '[ "$PWD" = /app ]',
  '[ "$(realpath /tests/fixture.txt)" = /tests/fixture.txt ]',
  "grep -q expected /tests/fixture.txt",
  "setpriv --reuid=59999 --regid=59999 --clear-groups cat /app/answer.txt > /tmp/seen",
  'if [ "$(cat /tmp/seen)" = expected ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi',
].join("\n");

if (!root || !bwrap)
  console.log(
    `skipped the built task's verifier in its container: it needs root with bubblewrap; here ${root ? "no bwrap" : "not root"}`,
  );
describe.skipIf(!root || !bwrap)(
  "a built task's verifier in its container, for real (skipped unless root with bubblewrap)",
  () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "fg-harbor-eval-"));
      const tree = join(dir, "tree");
      await mkdir(join(tree, "etc"), { recursive: true });
      await mkdir(join(tree, "usr"));
      for (const [l, t] of [
        ["bin", "usr/bin"],
        ["lib", "usr/lib"],
        ["lib64", "usr/lib64"],
        ["sbin", "usr/sbin"],
      ] as const)
        await symlink(t, join(tree, l));
      await writeFile(join(tree, "etc/passwd"), "root:x:0:0:root:/root:/bin/bash\n");
      await mkdir(join(dir, "ws/.harbor/tests"), { recursive: true });
      await writeFile(join(dir, "ws/.harbor/tests/test.sh"), TEST_SH);
      await writeFile(join(dir, "ws/.harbor/tests/fixture.txt"), "expected\n");
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    const verify = async (answer: string) => {
      await writeFile(join(dir, "ws/answer.txt"), answer);
      const r = containerRootOf(join(dir, "tree"), join(dir, `state-${answer.trim()}`));
      await mountContainerRoot(r);
      try {
        const args = buildBwrapArgs({
          workspace: join(dir, "ws"),
          workspaceDest: "/workspace",
          homeDest: "/root",
          tmpSizeMb: 16,
          binds: [{ src: "/usr", dest: "/usr" }],
          workspaceBinds: [{ src: join(dir, "ws"), dest: "/app", rw: true }],
          env: { PATH: "/usr/bin:/bin:/usr/sbin" },
          cwd: "/workspace",
          uid: 0,
          gid: 0,
          hostname: "t",
          network: "none",
          container: { root: r.merged, caps: CONTAINER_CAPS },
        });
        const [cmd, ...pre] = containerPrefix();
        return spawnSync(
          cmd!,
          [...pre, bwrap!, ...args, "--", "/bin/sh", "-c", containerEvalCommand("/app", 60)],
          { encoding: "utf8", timeout: 60_000 },
        );
      } finally {
        await unmountContainerRoot(r);
      }
    };

    it("copies the tests to /tests, runs test.sh from the WORKDIR, judges /logs/verifier/reward.txt", async () => {
      const gold = await verify("expected\n");
      expect(gold.stderr).toBe("");
      expect(gold.status).toBe(0);
      const empty = await verify("nothing\n");
      expect(empty.status).toBe(1);
    });
  },
);

describe("a built task's verifier outside its container", () => {
  it("fails saying what it needs (as root, run as another user: there `id -u` is 0)", () => {
    const sh = ["/bin/sh", "-c", containerEvalCommand("/app")];
    const argv = root ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...sh] : sh;
    const p = spawnSync(argv[0] as string, argv.slice(1), { encoding: "utf8" });
    expect(p.status).toBe(1);
    expect(p.stderr).toMatch(/runs in its container \(root, a writable \/\)/);
  });
  it("names the remedy in its command", () => {
    expect(containerEvalCommand("/app", 30)).toMatch(
      /run flakegym as root for the local backend, or use --backend podman/,
    );
    expect(containerEvalCommand("/app", 30)).toContain("timeout -k 10 30 bash /tests/test.sh");
  });
});
